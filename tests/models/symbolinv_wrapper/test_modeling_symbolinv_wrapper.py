"""The renaming-invariant wrapper around a pretrained seq2seq checkpoint (tiny random BART, Marian, M2M100)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from testers import CompileTesterMixin, GenerationTesterMixin, ModelTesterMixin, RenamingInvarianceTesterMixin
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    M2M100Config,
    M2M100ForConditionalGeneration,
    MarianConfig,
    MarianMTModel,
    PreTrainedTokenizerFast,
)

from hf_symbolinv import SymbolInvWrapperConfig, SymbolInvWrapperForConditionalGeneration
from hf_symbolinv.models.symbolinv_wrapper.cache_names import CACHE_NAMES, output_cache
from hf_symbolinv.models.symbolinv_wrapper.streams import TIE_BREAK

BASE_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "&", "|", "!", "(", ")"]
LETTERS = [chr(code) for code in range(ord("a"), ord("z") + 1)]
VOCAB_SIZE = len(BASE_TOKENS) + len(LETTERS)
BOS, PAD, EOS = 0, 1, 2
SPECIAL = dict(pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, decoder_start_token_id=EOS)
TINY = dict(
    vocab_size=VOCAB_SIZE,
    d_model=16,
    encoder_layers=1,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=32,
    decoder_ffn_dim=32,
    max_position_embeddings=64,
    dropout=0.0,
    attention_dropout=0.0,
    activation_dropout=0.0,
    init_std=0.5,
    **SPECIAL,
)
INPUTS = ["& c | d ! c e", "! ( x )", "& & y y", "| z ( a & q )", "& ! ( | )"]  # 3, 1, 1, 3 and 0 symbols


def make_tokenizer(extra_tokens: tuple[str, ...] = ()) -> PreTrainedTokenizerFast:
    vocab = {token: index for index, token in enumerate(BASE_TOKENS + LETTERS + list(extra_tokens))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )


def make_bart(seed: int = 0) -> BartForConditionalGeneration:
    torch.manual_seed(seed)
    model = BartForConditionalGeneration(BartConfig(**TINY, forced_eos_token_id=None)).eval()
    with torch.no_grad():
        # A random model rarely emits symbols; favouring the actual token makes generation tests see some.
        model.final_logits_bias[0, token_id("a")] += 2.0
    return model


def token_id(token: str) -> int:
    return (BASE_TOKENS + LETTERS).index(token)


def ids(text: str) -> torch.LongTensor:
    return torch.tensor([[token_id(token) for token in text.split()]])


def rename_text(text: str, renaming: dict[str, str]) -> str:
    return " ".join(renaming.get(token, token) for token in text.split())


def rename_ids(sequences: torch.LongTensor, renaming: dict[str, str]) -> torch.LongTensor:
    renamed = sequences.clone()
    for old, new in renaming.items():
        renamed[sequences == token_id(old)] = token_id(new)
    return renamed


def rename_columns(logits: torch.Tensor, renaming: dict[str, str]) -> torch.Tensor:
    """Where symbol ``old``'s score must be after renaming ``old -> new``; symbols not renamed stay put."""
    renamed = logits.clone()
    for old in renaming:
        renamed[..., token_id(old)] = float("-inf")  # a symbol renamed away from is absent now
    for old, new in renaming.items():
        renamed[..., token_id(new)] = logits[..., token_id(old)]
    return renamed


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return make_tokenizer()


@pytest.fixture(scope="module")
def wrapper(tokenizer) -> SymbolInvWrapperForConditionalGeneration:
    model, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(make_bart(), tokenizer, "a", "b")
    return model


def batch(tokenizer, texts: list[str]) -> dict[str, torch.Tensor]:
    return dict(tokenizer(texts, return_tensors="pt", padding=True))


# ---------------------------------------------------------------------------------------------------
# Construction and the projection
# ---------------------------------------------------------------------------------------------------
def test_parameters_are_exactly_the_wrapped_models(tokenizer):
    bart = make_bart()
    wrapped_names = {name for name, _ in bart.named_parameters()}
    model, returned_tokenizer = SymbolInvWrapperForConditionalGeneration.from_seq2seq(bart, tokenizer, "a", "b")
    assert returned_tokenizer is tokenizer
    assert model.wrapped is bart
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in bart.parameters())
    assert {name.removeprefix("wrapped.") for name, _ in model.named_parameters()} == wrapped_names
    assert model.config.symbol_token_ids == [token_id(letter) for letter in LETTERS]  # default regex: a-z
    assert (model.config.actual_token_id, model.config.placeholder_token_id) == (token_id("a"), token_id("b"))
    assert model.config.max_streams == 26
    summary = model.symbol_summary(tokenizer)
    assert "26 tokens" in summary and "'a' (id 9)" in summary and "placeholder: 'b' (id 10)" in summary


@torch.no_grad()
@pytest.mark.parametrize(
    "renaming",
    [
        {"c": "x", "d": "c", "e": "a"},  # onto the actual token's name, and onto a name the input had
        {"c": "d", "d": "c"},  # a swap
        {"c": "p", "d": "q", "e": "r"},  # onto fresh names
    ],
)
def test_renaming_permutes_the_symbol_columns_bit_for_bit(wrapper, renaming):
    source, target = "& c | d ! c e", "</s> & c d e | c"
    logits = wrapper(input_ids=ids(source), decoder_input_ids=ids(target)).logits
    renamed = wrapper(
        input_ids=ids(rename_text(source, renaming)), decoder_input_ids=ids(rename_text(target, renaming))
    ).logits
    assert torch.equal(renamed, rename_columns(logits, renaming))
    symbols = [token_id(letter) for letter in LETTERS]
    present = [token_id(s) for s in "cde"]
    assert torch.isfinite(logits[..., present]).all()
    assert torch.isinf(logits[..., [s for s in symbols if s not in present]]).all()


@torch.no_grad()
def test_one_symbol_input_gives_the_wrapped_models_logits(wrapper):
    source, target = "! ( c & c )", "</s> ! c & c"
    logits = wrapper(input_ids=ids(source), decoder_input_ids=ids(target)).logits
    # The one stream is the input with its symbol written as the actual token.
    reference = wrapper.wrapped(
        input_ids=ids(rename_text(source, {"c": "a"})), decoder_input_ids=ids(rename_text(target, {"c": "a"}))
    ).logits
    base = list(range(len(BASE_TOKENS)))
    assert torch.equal(logits[..., base], reference[..., base])
    assert torch.equal(logits[..., token_id("c")], reference[..., token_id("a")])  # rank 0: no tie-break penalty


@torch.no_grad()
def test_symbol_free_input_is_one_unchanged_stream(wrapper):
    source, target = "& ! ( | )", "</s> ! &"
    output = wrapper(input_ids=ids(source), decoder_input_ids=ids(target))
    reference = wrapper.wrapped(input_ids=ids(source), decoder_input_ids=ids(target)).logits
    base = list(range(len(BASE_TOKENS)))
    assert torch.equal(output.logits[..., base], reference[..., base])
    assert torch.isinf(output.logits[..., len(BASE_TOKENS) :]).all()  # no symbol can be emitted
    assert output.stream_mask.tolist() == [[True]] and output.stream_symbol_ids.tolist() == [[-1]]


@torch.no_grad()
def test_base_scores_average_the_streams_and_symbols_read_their_own_stream(wrapper):
    source, target = "& c d", "</s> d"
    logits = wrapper(input_ids=ids(source), decoder_input_ids=ids(target)).logits
    # The two streams, run as one batch of the wrapped model the way the wrapper runs them.
    streams = wrapper.wrapped(
        input_ids=torch.cat([ids("& a b"), ids("& b a")]), decoder_input_ids=torch.cat([ids("</s> b"), ids("</s> a")])
    ).logits
    stream_c, stream_d = streams[:1], streams[1:]
    base = list(range(len(BASE_TOKENS)))
    assert torch.equal(logits[..., base], ((stream_c + stream_d) / 2)[..., base])
    actual = token_id("a")
    assert torch.equal(logits[..., token_id("c")], stream_c[..., actual])
    assert torch.equal(logits[..., token_id("d")], stream_d[..., actual] - TIE_BREAK)  # rank 1 pays the tie break


@torch.no_grad()
def test_batch_matches_single_samples(wrapper, tokenizer):
    """Padding streams (fewer symbols than the batch's most) and padded tokens change nothing."""
    inputs = batch(tokenizer, INPUTS)
    targets = torch.tensor(
        [
            [EOS, token_id("&"), token_id("c")],
            [EOS, token_id("!"), token_id("x")],
            [EOS, token_id("y"), token_id("y")],
            [EOS, token_id("z"), token_id("q")],
            [EOS, token_id("!"), token_id("(")],
        ]
    )
    batched = wrapper(**inputs, decoder_input_ids=targets).logits
    assert inputs["attention_mask"].sum(1).tolist() != [inputs["input_ids"].shape[1]] * len(INPUTS)
    for row, text in enumerate(INPUTS):
        single = wrapper(input_ids=ids(text), decoder_input_ids=targets[row : row + 1]).logits
        assert torch.equal(torch.isinf(single), torch.isinf(batched[row : row + 1]))
        finite = torch.isfinite(single)
        torch.testing.assert_close(batched[row : row + 1][finite], single[finite], rtol=0, atol=1e-5)


@torch.no_grad()
@pytest.mark.parametrize("keyword", CACHE_NAMES)
def test_cached_decoding_matches_the_full_forward(wrapper, tokenizer, keyword):
    inputs = batch(tokenizer, INPUTS)
    targets = torch.cat([torch.full((len(INPUTS), 1), EOS), inputs["input_ids"][:, :4]], dim=1)
    full = wrapper(**inputs, decoder_input_ids=targets, use_cache=False).logits
    output = wrapper(**inputs, decoder_input_ids=targets[:, :2], use_cache=True)
    steps = [output.logits]
    encoder_outputs = (output.encoder_last_hidden_state, output.stream_symbol_ids, output.stream_mask)
    for position in range(2, targets.shape[1]):
        output = wrapper(
            encoder_outputs=encoder_outputs,
            attention_mask=inputs["attention_mask"],
            decoder_input_ids=targets[:, position : position + 1],
            **{keyword: output_cache(output)},
            use_cache=True,
        )
        steps.append(output.logits)
    # The cache seen by generate() is batch-major: streams are folded into the heads dimension.
    keys = output_cache(output).self_attention_cache.layers[0].keys
    streams = output.stream_mask.shape[1]
    assert keys.shape[:3] == (
        len(INPUTS),
        streams * wrapper.config.wrapped_config.decoder_attention_heads,
        targets.shape[1],
    )
    incremental = torch.cat(steps, dim=1)
    assert torch.equal(torch.isinf(full), torch.isinf(incremental))
    torch.testing.assert_close(incremental[torch.isfinite(full)], full[torch.isfinite(full)], rtol=0, atol=1e-5)


def test_too_many_symbols_name_max_streams(tokenizer):
    model, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(make_bart(), tokenizer, "a", "b", max_streams=2)
    with pytest.raises(ValueError, match="max_streams=2"):
        model(input_ids=ids("& c | d e"), decoder_input_ids=ids("</s>"))


def test_labels_give_a_loss_and_absent_symbols_are_refused(tokenizer):
    model, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(make_bart(), tokenizer, "a", "b")
    model.activation_checkpointing_enable()  # forwarded to the wrapped model's layers
    model.train()
    inputs = batch(tokenizer, ["& c | d ! c e", "! ( x )"])
    targets = batch(tokenizer, ["c d e", "! x"])
    labels = targets["input_ids"].masked_fill(targets["attention_mask"] == 0, -100)
    loss = model(**inputs, labels=labels).loss
    loss.backward()
    assert torch.isfinite(loss) and model.wrapped.model.shared.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="does not occur in the input"):
        model(**inputs, labels=torch.tensor([[token_id("q")], [token_id("x")]]))


@torch.no_grad()
def test_log_prob_averaging_is_an_option(tokenizer):
    model, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(make_bart(), tokenizer, "a", "b")
    model.config.stream_scores = "log_probs"
    source, target = "& c | d ! c e", "</s> & c d"
    logits = model(input_ids=ids(source), decoder_input_ids=ids(target)).logits
    renaming = {"c": "e", "d": "c", "e": "d"}
    renamed = model(
        input_ids=ids(rename_text(source, renaming)), decoder_input_ids=ids(rename_text(target, renaming))
    ).logits
    assert torch.equal(renamed, rename_columns(logits, renaming))
    single = model(input_ids=ids("! c"), decoder_input_ids=ids("</s> c")).logits
    reference = torch.log_softmax(model.wrapped(input_ids=ids("! a"), decoder_input_ids=ids("</s> a")).logits, -1)
    torch.testing.assert_close(single[..., token_id("c")], reference[..., token_id("a")], rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------------
GENERATION_MODES = [
    dict(num_beams=1),
    dict(num_beams=3),
    dict(num_beams=3, num_return_sequences=2),
]


@torch.no_grad()
@pytest.mark.parametrize("mode", GENERATION_MODES, ids=["greedy", "beam", "beam-2-returned"])
def test_generate_with_and_without_cache_agree_and_rename(wrapper, tokenizer, mode):
    inputs = batch(tokenizer, INPUTS)
    settings = dict(max_new_tokens=8, min_new_tokens=8, **mode)  # min_new_tokens: the same length for all rows
    cached = wrapper.generate(**inputs, use_cache=True, **settings)
    uncached = wrapper.generate(**inputs, use_cache=False, **settings)
    assert torch.equal(cached, uncached)
    assert (cached[:, 1:] >= len(BASE_TOKENS)).any(), "the test model should emit some symbols"
    # Renaming the input renames the output, and nothing else.
    renaming = {"c": "g", "d": "c", "e": "h", "x": "c", "y": "k", "z": "m", "q": "z"}
    renamed = wrapper.generate(**batch(tokenizer, [rename_text(text, renaming) for text in INPUTS]), **settings)
    # Each row renames independently (one input's names are unrelated to another's), but one dict does here.
    assert torch.equal(renamed, rename_ids(cached, renaming))
    # Each sample as if alone (its own stream count, no padding).
    per_sample = cached.shape[0] // len(INPUTS)
    for row, text in enumerate(INPUTS):
        single = wrapper.generate(input_ids=ids(text), **settings)
        assert torch.equal(single, cached[row * per_sample : (row + 1) * per_sample])


@torch.no_grad()
@pytest.mark.parametrize(
    "build",
    [
        lambda: MarianMTModel(MarianConfig(**TINY, decoder_vocab_size=VOCAB_SIZE)),
        lambda: M2M100ForConditionalGeneration(M2M100Config(**TINY)),
    ],
    ids=["marian", "m2m100"],
)
def test_other_seq2seq_families(tokenizer, build):
    torch.manual_seed(0)
    model, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(build().eval(), tokenizer, "a", "b")
    inputs = batch(tokenizer, INPUTS)
    settings = dict(max_new_tokens=6, min_new_tokens=6, num_beams=2)
    cached = model.generate(**inputs, use_cache=True, **settings)
    assert torch.equal(cached, model.generate(**inputs, use_cache=False, **settings))
    renaming = {"c": "d", "d": "c", "x": "w"}
    renamed = model.generate(**batch(tokenizer, [rename_text(text, renaming) for text in INPUTS]), **settings)
    assert torch.equal(renamed, rename_ids(cached, renaming))


# ---------------------------------------------------------------------------------------------------
# Saving and loading
# ---------------------------------------------------------------------------------------------------
@torch.no_grad()
def test_save_and_reload_round_trip(wrapper, tokenizer, tmp_path):
    wrapper.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "symbolinv_wrapper" and saved["wrapped_config"]["model_type"] == "bart"
    assert saved["auto_map"]["AutoModelForSeq2SeqLM"].startswith("modeling_symbolinv_wrapper.")
    assert isinstance(AutoConfig.from_pretrained(tmp_path), SymbolInvWrapperConfig)
    inputs = batch(tokenizer, INPUTS)
    targets = torch.tensor([[EOS, token_id("c")]] * len(INPUTS))
    expected_logits = wrapper(**inputs, decoder_input_ids=targets).logits
    expected = wrapper.generate(**inputs, max_new_tokens=6, num_beams=2)
    for loaded in (
        SymbolInvWrapperForConditionalGeneration.from_pretrained(tmp_path),
        AutoModelForSeq2SeqLM.from_pretrained(tmp_path),
    ):
        assert isinstance(loaded, SymbolInvWrapperForConditionalGeneration) and not loaded.training
        assert loaded.wrapped.lm_head.weight is loaded.wrapped.model.shared.weight  # BART's tie survives
        assert torch.equal(loaded(**inputs, decoder_input_ids=targets).logits, expected_logits)
        assert torch.equal(loaded.generate(**inputs, max_new_tokens=6, num_beams=2), expected)
    reloaded_tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded_tokenizer("& c d")["input_ids"] == tokenizer("& c d")["input_ids"]


@pytest.mark.slow
def test_saved_folder_loads_without_the_package(wrapper, tokenizer, tmp_path):
    wrapper.save_pretrained(tmp_path)
    input_ids = ids("& c | d ! c e")
    expected = wrapper.generate(input_ids=input_ids, max_new_tokens=6, num_beams=2)
    script = textwrap.dedent(f"""
        import sys
        sys.modules["hf_symbolinv"] = None  # as on a machine without the package
        import torch
        from transformers import AutoModelForSeq2SeqLM
        model = AutoModelForSeq2SeqLM.from_pretrained({str(tmp_path)!r}, trust_remote_code=True)
        assert type(model).__module__.startswith("transformers_modules"), type(model).__module__
        out = model.generate(input_ids=torch.tensor({input_ids.tolist()}), max_new_tokens=6, num_beams=2)
        print("OUT", out.tolist())
    """)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("OUT "))
    assert json.loads(line[4:]) == expected.tolist()


def test_from_seq2seq_loads_a_path(tokenizer, tmp_path):
    bart = make_bart()
    bart.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model, loaded_tokenizer = SymbolInvWrapperForConditionalGeneration.from_seq2seq(str(tmp_path), None, "a", "b")
    assert all(torch.equal(value, bart.state_dict()[name]) for name, value in model.wrapped.state_dict().items())
    assert loaded_tokenizer.convert_tokens_to_ids("a") == token_id("a")


# ---------------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("actual", "placeholder", "symbols", "message"),
    [
        ("alpha", "b", None, r"actual token 'alpha' is not in the vocabulary"),
        ("a", "beta", None, r"placeholder token 'beta' is not in the vocabulary"),
        ("a", "a", None, r"actual and placeholder are the same token 'a'"),
        ("a", "b", r"[c-z]", r"actual token 'a' is not matched by the symbol regular expression"),
        ("a", "b", r"[ac-z]", r"placeholder token 'b' is not matched by the symbol regular expression"),
        ("a", "b", r"[0-9]", r"matches no token"),
        ("a", "b", r"a", r"matches only one token \('a'\); at least 2 are needed"),
        ("a", "b", r"[a-z", r"not a valid regular expression"),
        ("a", "b", r"[a-z]|</s>", r"matches special tokens \['</s>'\]"),
    ],
)
def test_from_seq2seq_refuses_a_bad_mapping(tokenizer, actual, placeholder, symbols, message):
    with pytest.raises(ValueError, match=message):
        SymbolInvWrapperForConditionalGeneration.from_seq2seq(make_bart(), tokenizer, actual, placeholder, symbols)


def test_unknown_token_hint_and_word_start_markers():
    marked = make_tokenizer(extra_tokens=("\u0120v", "\u0120w", "\u2581u", "va", "\u0120foo"))
    with pytest.raises(ValueError, match="'foo' is not in the vocabulary .*did you mean 'Ġfoo'"):
        SymbolInvWrapperForConditionalGeneration.from_seq2seq(
            BartForConditionalGeneration(BartConfig(**{**TINY, "vocab_size": len(marked)})), marked, "foo", "a"
        )
    model, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(
        BartForConditionalGeneration(BartConfig(**{**TINY, "vocab_size": len(marked)})), marked, "\u0120v", "a"
    )
    names = set(marked.convert_ids_to_tokens(model.config.symbol_token_ids))
    assert names == set(LETTERS) | {"\u0120v", "\u0120w", "\u2581u"}  # "va" and "Ġfoo" are not one letter


@pytest.mark.parametrize(
    "build",
    [
        lambda: GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB_SIZE, n_embd=16, n_layer=1, n_head=2, n_positions=32)),
        lambda: BertModel(
            BertConfig(
                vocab_size=VOCAB_SIZE, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
            )
        ),
    ],
    ids=["gpt2", "bert"],
)
def test_from_seq2seq_refuses_a_model_without_encoder_decoder(tokenizer, build):
    with pytest.raises(ValueError, match="needs an encoder-decoder AutoModelForSeq2SeqLM checkpoint"):
        SymbolInvWrapperForConditionalGeneration.from_seq2seq(build(), tokenizer, "a", "b")


def test_from_seq2seq_refuses_a_decoder_only_path_before_loading_weights(tokenizer, tmp_path):
    GPT2Config(vocab_size=VOCAB_SIZE, n_embd=16, n_layer=1, n_head=2).save_pretrained(tmp_path)  # no weights
    with pytest.raises(ValueError, match="GPT2Config .* is not an encoder-decoder"):
        SymbolInvWrapperForConditionalGeneration.from_seq2seq(str(tmp_path), tokenizer, "a", "b")


def test_from_seq2seq_refuses_a_headless_or_already_invariant_model(tokenizer, wrapper):
    with pytest.raises(ValueError, match="BartForConditionalGeneration"):
        SymbolInvWrapperForConditionalGeneration.from_seq2seq(make_bart().model, tokenizer, "a", "b")
    with pytest.raises(ValueError, match="renaming-invariant already"):
        SymbolInvWrapperForConditionalGeneration.from_seq2seq(wrapper, tokenizer, "a", "b")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        (dict(symbol_token_ids=[9]), "symbol_token_ids"),
        (dict(symbol_token_ids=[9, 10], actual_token_id=9, placeholder_token_id=9), "placeholder_token_id"),
        (dict(symbol_token_ids=[9, 10], actual_token_id=11, placeholder_token_id=10), "actual_token_id"),
        (dict(symbol_token_ids=[9, 99], actual_token_id=9, placeholder_token_id=99), "symbol_token_ids"),
        (dict(symbol_token_ids=[2, 10], actual_token_id=2, placeholder_token_id=10), "symbol_token_ids"),
        (dict(symbol_token_ids=[9, 10], actual_token_id=9, placeholder_token_id=10, max_streams=0), "max_streams"),
        (
            dict(symbol_token_ids=[9, 10], actual_token_id=9, placeholder_token_id=10, stream_scores="probs"),
            "stream_scores",
        ),
    ],
)
def test_config_errors_name_the_field(fields, field):
    with pytest.raises(ValueError, match=rf"SymbolInvWrapperConfig\.{field}:"):
        SymbolInvWrapperConfig(wrapped_config=BartConfig(**TINY), **fields)


def test_config_needs_an_encoder_decoder_and_a_mapping():
    with pytest.raises(ValueError, match=r"SymbolInvWrapperConfig\.wrapped_config: a GPT2Config"):
        SymbolInvWrapperConfig(
            wrapped_config=GPT2Config(), symbol_token_ids=[1, 2], actual_token_id=1, placeholder_token_id=2
        )
    bare = SymbolInvWrapperConfig(wrapped_config=BartConfig(**TINY))  # Transformers builds such defaults
    with pytest.raises(ValueError, match=r"symbol_token_ids: not set; build the wrapper with"):
        SymbolInvWrapperForConditionalGeneration(bare)


# ---------------------------------------------------------------------------------------------------
# The converter's command line
# ---------------------------------------------------------------------------------------------------
def test_cli_wraps_a_saved_bart_checkpoint(tokenizer, tmp_path, capsys):
    from hf_symbolinv.commands import main

    bart = make_bart()
    bart.save_pretrained(tmp_path / "bart")
    tokenizer.save_pretrained(tmp_path / "bart")
    assert main(["convert", str(tmp_path / "bart"), str(tmp_path / "sit"), "--actual", "a", "--placeholder", "b"]) == 0
    printed = capsys.readouterr().out
    assert "per-stream wrapper" in printed and "symbols: 26 vocabulary entries" in printed
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "sit").eval()
    assert isinstance(loaded, SymbolInvWrapperForConditionalGeneration)
    in_memory, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(bart, tokenizer, "a", "b")
    inputs = batch(AutoTokenizer.from_pretrained(tmp_path / "sit"), INPUTS[:3])
    decoder = torch.full((3, 2), EOS)
    with torch.no_grad():
        assert torch.equal(
            loaded(**inputs, decoder_input_ids=decoder).logits, in_memory(**inputs, decoder_input_ids=decoder).logits
        )
    assert main(["convert", str(tmp_path / "bart"), str(tmp_path / "bad"), "--actual", "zz"]) == 2
    assert "'zz'" in capsys.readouterr().err and not (tmp_path / "bad").exists()
    # The CLI's task commands need a task vocabulary, which a wrapped model has not: one line, no AttributeError.
    for argv in (["solve", str(tmp_path / "sit"), "& a b"], ["evaluate", str(tmp_path / "sit"), "--data", "d"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "has no task vocabulary" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------------
# The model-agnostic properties (tests/models/testers.py)
# ---------------------------------------------------------------------------------------------------
class TestWrapperProperties(ModelTesterMixin, GenerationTesterMixin, RenamingInvarianceTesterMixin):
    auto_class_name = "AutoModelForSeq2SeqLM"
    expected_saved_files = frozenset(
        {
            "config.json",
            "generation_config.json",
            "model.safetensors",
            "cache_names.py",
            "configuration_symbolinv_wrapper.py",
            "config_fields.py",
            "modeling_symbolinv_wrapper.py",
            "streams.py",
            "tokenizer.json",
            "tokenizer_config.json",
        }
    )
    max_new_tokens = 6
    #: Renamings of the symbols used by INPUTS onto other letters (c, d, e, x, y, z, a, q).
    renamings = (
        {"c": "p", "d": "c", "e": "w", "x": "e", "y": "x", "z": "y", "q": "d"},
        {"c": "k", "d": "m", "e": "n", "x": "o", "y": "r", "z": "s", "q": "t"},
        {"c": "d", "d": "c", "x": "z", "z": "x"},
    )

    def make_model(self) -> SymbolInvWrapperForConditionalGeneration:
        model, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(make_bart(), make_tokenizer(), "a", "b")
        return model.eval()

    def make_tokenizer(self) -> PreTrainedTokenizerFast:
        return make_tokenizer()

    def make_inputs(self, model) -> dict:
        inputs = batch(make_tokenizer(), INPUTS[:4])
        decoder = torch.tensor([[EOS, token_id("&"), token_id("c")]] * 4)
        return dict(inputs, decoder_input_ids=decoder)

    def make_generation_inputs(self, model) -> dict:
        return batch(make_tokenizer(), INPUTS[:4])

    def symbol_permutation(self, model, seed: int) -> dict[str, str]:
        return self.renamings[seed % len(self.renamings)]

    def rename_inputs(self, inputs: dict, permutation: dict[str, str]) -> dict:
        return {key: rename_ids(value, permutation) if "input_ids" in key else value for key, value in inputs.items()}

    def permute_logits(self, logits: torch.Tensor, permutation: dict[str, str]) -> torch.Tensor:
        return rename_columns(logits, permutation)

    def emits_symbols(self, sequences: torch.Tensor, model) -> bool:
        return bool((sequences >= len(BASE_TOKENS)).any())


def test_checkpoints_saved_before_the_layout_change_still_load():
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "pre_layout"
    reference = torch.load(fixtures / "wrapper_reference.pt")
    expected = reference.pop("logits")
    model = AutoModelForSeq2SeqLM.from_pretrained(fixtures / "wrapper").eval()
    assert isinstance(model, SymbolInvWrapperForConditionalGeneration)
    with torch.no_grad():
        torch.testing.assert_close(model(**reference).logits, expected, atol=1e-5, rtol=1e-5)


class TestWrapperCompile(CompileTesterMixin):
    def make_model(self) -> SymbolInvWrapperForConditionalGeneration:
        model, _ = SymbolInvWrapperForConditionalGeneration.from_seq2seq(make_bart(), make_tokenizer(), "a", "b")
        return model

    def training_batch(self, model, sources: list[str], targets: list[str]) -> dict:
        tokenizer = make_tokenizer()
        inputs = batch(tokenizer, sources)
        encoded = batch(tokenizer, targets)
        labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
        return dict(inputs, labels=labels, **model.stream_inputs(inputs["input_ids"], inputs["attention_mask"]))

    def make_bucket_batches(self, model) -> tuple[dict, dict, dict]:
        first = self.training_batch(model, INPUTS[:4], ["c d e", "x", "y", "z q"])
        renamed = ["& d | c ! d x", "! ( y )", "& & z z", "| c ( a & e )"]  # the same lengths and symbol counts
        second = self.training_batch(model, renamed, ["d c x", "y", "z", "c e"])
        return first, second, self.training_batch(model, INPUTS[:2], ["c d e", "x"])


def test_stream_symbol_ids_must_be_what_the_ids_give(tokenizer, wrapper):
    inputs = batch(tokenizer, INPUTS[:4])
    given = wrapper.stream_inputs(inputs["input_ids"], inputs["attention_mask"])["stream_symbol_ids"]
    assert given.shape == (4, 3) and given[0].tolist() == [token_id("c"), token_id("d"), token_id("e")]
    decoder = torch.tensor([[EOS, token_id("&")]] * 4)
    with torch.no_grad():
        plain = wrapper(**inputs, decoder_input_ids=decoder).logits
        wider = torch.nn.functional.pad(given, (0, 2), value=-1)  # a wider bucket: padding streams, same logits
        torch.testing.assert_close(wrapper(**inputs, decoder_input_ids=decoder, stream_symbol_ids=wider).logits, plain)
        with pytest.raises(ValueError, match="stream_symbol_ids .* does not match input_ids"):
            wrapper(**inputs, decoder_input_ids=decoder, stream_symbol_ids=given.flip(1))
