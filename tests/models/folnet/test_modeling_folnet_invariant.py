"""The renaming-invariant relational FOLNet (``symbol_invariant=True``): the shared testers (renaming, cache,
save/load, remote code), a negative control, names never seen in training, more symbols than trained, and
the base binary atoms (same symbol, parse tree) against naive references."""

from __future__ import annotations

import copy
import functools

import pytest
import torch
from testers import (
    CompileTesterMixin,
    GenerationTesterMixin,
    ModelTesterMixin,
    RenamingInvarianceTesterMixin,
    assert_fails,
    permute_symbol_columns,
    rename_symbol_ids,
    rename_symbol_inputs,
)

import hf_symbolinv.models  # noqa: F401  (registers the families with the Auto classes)
from hf_symbolinv.models.folnet import FOLNetConfig, FOLNetForConditionalGeneration, FOLNetForMaskedLM
from hf_symbolinv.models.folnet.modeling_folnet import (
    TREE_RELATIONS,
    FOLNetForSequenceClassification,
    same_symbol_ids,
    tree_relation_ids,
)
from hf_symbolinv.models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer
from hf_symbolinv.tasks.vocabulary import get_vocabulary

VOCABULARY = get_vocabulary("prop")
NUM_BASE = VOCABULARY.num_base_tokens
SLOTS = 24
#: Training formulas: at most three symbols, so only slots 0..2 are ever seen.
TRAIN_FORMULAS = ["&a|b!c", "|&ab&ca", "^a&b!a", "!a", "&ab", "|b!a", "=a^bc", "&!c|ab", "|aa", "^b&ac"]
FAMILY_FILES = {
    "config.json",
    "model.safetensors",
    "generation_config.json",
    "cache_names.py",
    "configuration_folnet.py",
    "config_fields.py",
    "modeling_folnet.py",
    "operators.py",
    "loading.py",
}


def tokenizer() -> SymbolInvTokenizer:
    return SymbolInvTokenizer.from_preset("prop", max_symbols=SLOTS)


def invariant_config(**overrides) -> FOLNetConfig:
    fields = dict(
        vocab_size=NUM_BASE + SLOTS,
        num_layers=2,
        decoder_layers=2,
        num_heads=2,
        head_dim=8,
        binary_dim=8,
        ffn_dim=32,
        binary_ffn_dim=16,
        max_relative_distance=4,
        dropout=0.0,
        initializer_range=0.3,
        num_base_tokens=NUM_BASE,
        token_arities=VOCABULARY.arity_list(),
        symbol_invariant=True,
        vocabulary="prop",
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=2,
    )
    return FOLNetConfig(**{**fields, **overrides})


def symbols_target(formula: str) -> str:
    """The task the tiny models learn: each symbol of the formula, in order of first appearance, then 1."""
    return "".join(f"{name}1" for name in dict.fromkeys(ch for ch in formula if ch.isalpha()))


def batch(formulas: list[str]) -> dict[str, torch.Tensor]:
    return dict(
        tokenizer()(formulas, text_target=[symbols_target(f) for f in formulas], padding=True, return_tensors="pt")
    )


#: A fit whose final loss is below this answers every training formula; some seeds stall near 0.17 on some CPUs.
FITTED_LOSS = 0.05


@functools.cache
def _trained(steps: int = 150, **overrides) -> FOLNetForConditionalGeneration:
    """The best of up to three seeds: the first whose fit reaches :data:`FITTED_LOSS`, so that the tests do not
    hang on one seed's rounding (a stalled fit on one CPU, a fitted one on another)."""
    data = batch(TRAIN_FORMULAS)
    labels = data["labels"].masked_fill(data["labels"] == 0, -100)
    best = None
    for seed in range(3):
        torch.manual_seed(seed)
        model = FOLNetForConditionalGeneration(invariant_config(**overrides))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        model.train()
        for _ in range(steps):
            optimizer.zero_grad()
            loss = model(input_ids=data["input_ids"], attention_mask=data["attention_mask"], labels=labels).loss
            loss.backward()
            optimizer.step()
        if best is None or loss.item() < best[0]:
            best = (loss.item(), model)
        if best[0] < FITTED_LOSS:
            break
    return best[1].eval()


def trained(steps: int = 150, **overrides) -> FOLNetForConditionalGeneration:
    """A tiny model fitted to :func:`symbols_target` on slots 0..2 (150 steps learn it; fewer make a model that
    already emits symbols)."""
    return copy.deepcopy(_trained(steps, **overrides))


def generation_inputs() -> dict[str, torch.Tensor]:
    data = batch(["&a|b!c", "|ba", "^c&ab"])
    return {"input_ids": data["input_ids"], "attention_mask": data["attention_mask"]}


class TestFOLNetInvariantProperties(ModelTesterMixin, GenerationTesterMixin, RenamingInvarianceTesterMixin):
    auto_class_name = "AutoModelForSeq2SeqLM"
    expected_saved_files = frozenset(FAMILY_FILES)
    max_new_tokens = 8

    def make_model(self) -> FOLNetForConditionalGeneration:
        return trained()

    def make_inputs(self, model) -> dict:
        data = batch(["&a|b!c", "|&ab&ca", "!b", "=c^ab"])
        labels = data["labels"].masked_fill(data["labels"] == 0, -100)
        decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
        return dict(
            input_ids=data["input_ids"], attention_mask=data["attention_mask"], decoder_input_ids=decoder_input_ids
        )

    def make_generation_inputs(self, model) -> dict:
        return generation_inputs()

    def symbol_permutation(self, model, seed: int) -> torch.Tensor:
        return torch.randperm(SLOTS, generator=torch.Generator().manual_seed(seed))

    def rename_inputs(self, inputs: dict, permutation: torch.Tensor) -> dict:
        return rename_symbol_inputs(inputs, permutation, NUM_BASE)

    def permute_logits(self, logits: torch.Tensor, permutation: torch.Tensor) -> torch.Tensor:
        return permute_symbol_columns(logits, permutation, NUM_BASE)

    def emits_symbols(self, sequences: torch.Tensor, model) -> bool:
        return bool((sequences >= NUM_BASE).any())


@pytest.mark.slow
def test_the_non_invariant_folnet_fails_the_renaming_tests() -> None:
    """The negative control: the same tests on FOLNet with a learned embedding per symbol slot must fail."""

    class PerSlotEmbeddings(TestFOLNetInvariantProperties):
        def make_model(self) -> FOLNetForConditionalGeneration:
            return trained(60, symbol_invariant=False)

    assert_fails(PerSlotEmbeddings().test_logits_permute_under_renaming)
    assert_fails(PerSlotEmbeddings().test_generation_is_renamed_with_the_input)


def test_names_never_seen_in_training_are_copied() -> None:
    """Trained on slots 0..2 only, the model answers for slots 15..17 exactly as for 0..2, renamed; and its
    answers on the training formulas are the task's (so the renamed answers are right, not merely renamed)."""
    model = trained()
    data = batch(TRAIN_FORMULAS)
    with torch.no_grad():
        seen = model.generate(input_ids=data["input_ids"], attention_mask=data["attention_mask"], max_new_tokens=8)
    answers = tokenizer().batch_decode(seen, skip_special_tokens=True)
    # batch_decode gives slot names; compare the symbol/value pattern with the targets'.
    correct = sum(
        ids[ids >= 3].tolist() == t[t >= 3].tolist()
        for ids, t in zip(seen[:, 1:], data["labels"].masked_fill(data["labels"] < 0, 0))
    )
    assert correct >= len(TRAIN_FORMULAS) - 2, answers
    unseen = torch.arange(SLOTS)
    unseen[:3], unseen[15:18] = torch.tensor([15, 16, 17]), torch.tensor([0, 1, 2])
    renamed_ids = rename_symbol_ids(data["input_ids"], unseen, NUM_BASE)
    assert int(renamed_ids[renamed_ids >= NUM_BASE].min()) - NUM_BASE == 15
    with torch.no_grad():
        renamed = model.generate(input_ids=renamed_ids, attention_mask=data["attention_mask"], max_new_tokens=8)
    assert torch.equal(renamed, rename_symbol_ids(seen, unseen, NUM_BASE))
    assert bool((renamed >= NUM_BASE + 15).any())


def test_more_symbols_than_trained_run_and_stay_invariant() -> None:
    """Twelve symbols (training had at most three): logits are finite exactly on the symbols present, and
    renaming still permutes them."""
    model = trained()
    formula = "&" * 11 + "abcdefghijkl"
    data = batch([formula, "&ab"])
    assert len(set(data["input_ids"][0][data["input_ids"][0] >= NUM_BASE].tolist())) == 12
    decoder = model.prepare_decoder_input_ids_from_labels(data["labels"].masked_fill(data["labels"] == 0, -100))
    inputs = dict(input_ids=data["input_ids"], attention_mask=data["attention_mask"], decoder_input_ids=decoder)
    permutation = torch.randperm(SLOTS, generator=torch.Generator().manual_seed(11))
    with torch.no_grad():
        logits = model(**inputs).logits
        renamed = model(
            input_ids=rename_symbol_ids(inputs["input_ids"], permutation, NUM_BASE),
            attention_mask=inputs["attention_mask"],
            decoder_input_ids=rename_symbol_ids(decoder, permutation, NUM_BASE),
        ).logits
    assert torch.isfinite(logits[0, :, NUM_BASE : NUM_BASE + 12]).all()
    assert torch.isinf(logits[0, :, NUM_BASE + 12 :]).all()
    assert torch.isinf(logits[1, :, NUM_BASE + 2 :]).all()
    expected = permute_symbol_columns(logits, permutation, NUM_BASE)
    finite = torch.isfinite(expected)
    assert torch.equal(finite, torch.isfinite(renamed))
    torch.testing.assert_close(renamed[finite], expected[finite], atol=1e-5, rtol=1e-5)


def test_invariant_classification_is_unchanged_by_renaming() -> None:
    torch.manual_seed(0)
    model = FOLNetForSequenceClassification(invariant_config(num_labels=3)).eval()
    data = batch(["&a|b!c", "|&ab&ca"])
    permutation = torch.randperm(SLOTS, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        logits = model(input_ids=data["input_ids"], attention_mask=data["attention_mask"]).logits
        renamed = model(
            input_ids=rename_symbol_ids(data["input_ids"], permutation, NUM_BASE), attention_mask=data["attention_mask"]
        ).logits
    assert torch.equal(logits, renamed)


def test_masked_lm_refuses_the_invariant_variant() -> None:
    with pytest.raises(ValueError, match="symbol_invariant"):
        FOLNetForMaskedLM(invariant_config())


def test_the_invariant_model_has_no_weight_per_symbol() -> None:
    """Its parameters do not depend on the number of symbol slots."""
    small = FOLNetForConditionalGeneration(invariant_config(vocab_size=NUM_BASE + 4))
    large = FOLNetForConditionalGeneration(invariant_config(vocab_size=NUM_BASE + 400))
    assert {k: v.shape for k, v in small.state_dict().items()} == {k: v.shape for k, v in large.state_dict().items()}


def test_same_symbol_ids_by_known_verdicts() -> None:
    rows = torch.tensor([[-1, 0, 1, 0]])
    ids = same_symbol_ids(rows, rows)[0]
    assert ids.tolist() == [[0, 0, 0, 0], [0, 2, 1, 2], [0, 1, 2, 1], [0, 2, 1, 2]]


def _naive_tree_relations(formula: str) -> list[list[str]]:
    """Parse Polish notation recursively and name what token y is to token x."""
    arity = dict(zip(VOCABULARY.base_tokens, VOCABULARY.arity_list()))
    parent: list[int] = []

    def parse(position: int, up: int) -> int:
        parent.append(up)
        end = position + 1
        for _ in range(arity.get(formula[position], 0)):
            end = parse(end, position)
        return end

    assert parse(0, -1) == len(formula)

    def ancestors(x: int) -> list[int]:
        chain = []
        while parent[x] >= 0:
            x = parent[x]
            chain.append(x)
        return chain

    def relation(x: int, y: int) -> str:
        if x == y:
            return "self"
        if parent[x] == y:
            return "parent"
        if parent[y] == x:
            return "child"
        if parent[x] == parent[y] and parent[x] >= 0:
            return "sibling"
        if y in ancestors(x):
            return "ancestor"
        if x in ancestors(y):
            return "descendant"
        return "unrelated"

    return [[relation(x, y) for y in range(len(formula))] for x in range(len(formula))]


@pytest.mark.parametrize("formulas", [["&a|b!c", "a"], ["|&ab&ca", "^!!a=bc"]])
def test_tree_relations_equal_a_naive_parse(formulas: list[str]) -> None:
    config = invariant_config()
    data = batch(formulas)
    ids = tree_relation_ids(data["input_ids"], data["attention_mask"], config)
    for row, formula in enumerate(formulas):
        named = [[TREE_RELATIONS[i] for i in line] for line in ids[row].tolist()]
        n = len(formula)
        assert [line[:n] for line in named[:n]] == _naive_tree_relations(formula)
        # <eos> and padding are unrelated to everything.
        assert all(rel == "unrelated" for line in named[n:] for rel in line)
        assert all(rel == "unrelated" for line in named[:n] for rel in line[n:])


def test_an_incomplete_formula_is_named() -> None:
    data = batch(["&a|b"])
    with pytest.raises(ValueError, match="operator at position"):
        tree_relation_ids(data["input_ids"], data["attention_mask"], invariant_config())


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(num_base_tokens=None), "num_base_tokens"),
        (dict(token_arities=[0, 1]), "token_arities"),
        (dict(token_arities=[3] * NUM_BASE), "token_arities"),
        (dict(symbol_invariant="yes"), "symbol_invariant"),
        (dict(num_base_tokens=NUM_BASE + SLOTS), "num_base_tokens"),
        (dict(vocabulary=3), "vocabulary"),
    ],
)
def test_bad_symbol_fields_are_named(overrides: dict, field: str) -> None:
    with pytest.raises(ValueError, match=f"FOLNetConfig.{field}"):
        invariant_config(**overrides)


def test_the_tokenizers_output_feeds_the_model_and_a_wrong_symbol_mask_is_named() -> None:
    model = FOLNetForConditionalGeneration(invariant_config()).eval()
    encoded = tokenizer()(["&a|b!c", "|ba"], padding=True, return_tensors="pt")
    assert "symbol_mask" in encoded
    with torch.no_grad():
        plain = model.generate(
            input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"], max_new_tokens=4
        )
        assert torch.equal(model.generate(**encoded, max_new_tokens=4), plain)  # checked, then unused
    encoded["symbol_mask"][1, 0] = 1  # '|' is a base token
    with pytest.raises(ValueError, match=r"symbol_mask disagrees with input_ids at row 1, position 0 \(id 7"):
        model(**encoded, decoder_input_ids=plain[:, :1])
    encoded["symbol_mask"][1, 0] = 0
    encoded["symbol_mask"][1, -1] = 1  # padding: not checked
    model(**encoded, decoder_input_ids=plain[:, :1])


# ---------------------------------------------------------------------------------------------------
# torch.compile, on the seq2seq route's batches
# ---------------------------------------------------------------------------------------------------
def bucket_batch(model, formulas: list[str], length: int = 12, target_length: int = 8) -> dict[str, torch.Tensor]:
    """A training batch as the route's collator gives it (the tokenizer's columns, labels padded with -100,
    decoder inputs built from them), padded to one (length, target length) bucket."""
    data = batch(formulas)
    pad = model.config.pad_token_id
    ids, mask, symbols = (
        torch.nn.functional.pad(data[key], (0, length - data[key].shape[1]), value=value)
        for key, value in (("input_ids", pad), ("attention_mask", 0), ("symbol_mask", 0))
    )
    labels = data["labels"].masked_fill(data["labels"] == pad, -100)
    labels = torch.nn.functional.pad(labels, (0, target_length - labels.shape[1]), value=-100)
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
    return dict(
        input_ids=ids, attention_mask=mask, symbol_mask=symbols, labels=labels, decoder_input_ids=decoder_input_ids
    )


class TestFOLNetInvariantCompile(CompileTesterMixin):
    """The invariant FOLNet with parse-tree relations, as ``symbolinv train`` trains it."""

    overrides: dict = {}

    def make_model(self) -> FOLNetForConditionalGeneration:
        torch.manual_seed(0)
        return FOLNetForConditionalGeneration(invariant_config(num_layers=1, decoder_layers=1, **self.overrides))

    def make_bucket_batches(self, model) -> tuple[dict, dict, dict]:
        return (
            bucket_batch(model, TRAIN_FORMULAS[:5]),
            bucket_batch(model, TRAIN_FORMULAS[5:]),
            bucket_batch(model, TRAIN_FORMULAS[:3], length=10, target_length=7),
        )

    def training_loss(self, model, inputs: dict) -> torch.Tensor:
        # The Trainer passes the batch's target count as a tensor (gradient accumulation).
        return model(**inputs, num_items_in_batch=inputs["labels"].ne(-100).sum()).loss


class TestFOLNetPerSlotCompile(TestFOLNetInvariantCompile):
    """The route's default: parse-tree relations and one embedding row per symbol slot."""

    overrides = {"symbol_invariant": False}


def test_a_compiled_model_still_refuses_bad_inputs() -> None:
    """The input checks stay in the compiled graph (as assertions, with messages that name no position)."""
    import torch._dynamo

    torch._dynamo.reset()
    model = TestFOLNetInvariantCompile().make_model().train()
    model.compile(fullgraph=True, dynamic=False, backend="aot_eager")
    good = bucket_batch(model, TRAIN_FORMULAS[:5])
    model(**good).loss.backward()
    wrong_mask = {**good, "symbol_mask": good["symbol_mask"].clone()}
    wrong_mask["symbol_mask"][0, 0] = 1  # '&' is a base token
    with pytest.raises(RuntimeError, match="symbol_mask disagrees with input_ids"):
        model(**wrong_mask)
    incomplete = bucket_batch(model, ["&a|b", *TRAIN_FORMULAS[1:5]])
    with pytest.raises(RuntimeError, match="an input is not one formula in Polish notation"):
        model(**incomplete)
