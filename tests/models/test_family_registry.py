"""The family registry: a family is one folder plus one registration.

A fourth, toy family is written into a temporary folder by the test (a configuration, a model, and a ``family.py``
that registers it through the public registry); the unchanged CLI then trains it, evaluates it, saves it with its
card, answers with it, and the Auto classes load what it saved.
"""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from pathlib import Path

import pytest

from hf_symbolinv.commands import main
from hf_symbolinv.models import registry

TOY_CONFIGURATION = '''
from transformers import BartConfig


class ToyConfig(BartConfig):
    """A tiny BART that reads a task vocabulary of the package (the seq2seq route's tokenizer)."""

    model_type = "toy_bart"

    def __init__(self, vocabulary="prop", num_base_tokens=0, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary = vocabulary
        self.num_base_tokens = num_base_tokens

    @property
    def num_symbol_slots(self):
        return self.vocab_size - self.num_base_tokens
'''

TOY_MODELING = """
from transformers import BartForConditionalGeneration

from .configuration_toy import ToyConfig


class ToyForConditionalGeneration(BartForConditionalGeneration):
    config_class = ToyConfig

    def forward(self, input_ids=None, attention_mask=None, symbol_mask=None, labels=None, **kwargs):
        # The seq2seq route's batches carry the symbol mask; a plain BART has no use for it.
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, labels=labels, **kwargs)
"""

TOY_FAMILY = """
from transformers import AutoConfig, AutoModelForSeq2SeqLM

from hf_symbolinv.models.registry import Family, register_family

from .configuration_toy import ToyConfig
from .modeling_toy import ToyForConditionalGeneration

PRESETS = {"toy-tiny": dict(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32)}


def new_config(preset, task, overrides, options):
    from hf_symbolinv.tasks.vocabulary import EOS_ID, PAD_ID, START_ID, get_vocabulary
    from hf_symbolinv.tasks import get_task

    vocabulary = get_vocabulary(get_task(task).vocabulary)
    return ToyConfig(
        vocabulary=vocabulary.name,
        num_base_tokens=vocabulary.num_base_tokens,
        vocab_size=vocabulary.num_base_tokens + 8,
        pad_token_id=PAD_ID,
        bos_token_id=START_ID,
        eos_token_id=EOS_ID,
        decoder_start_token_id=START_ID,
        forced_eos_token_id=None,
        max_position_embeddings=256,
        **{**PRESETS[preset], **overrides},
    )


def new_tokenizer(config, task):
    from hf_symbolinv.models.symbolinv import SymbolInvTokenizer

    return SymbolInvTokenizer.from_preset(config.vocabulary, max_symbols=config.num_symbol_slots)


def card(config, task, fields):
    return f"# Toy BART for {task}\\n\\nd_model {config.d_model}\\n\\n{fields['evaluation']}\\n"


def register_auto():
    AutoConfig.register(ToyConfig.model_type, ToyConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(ToyConfig, ToyForConditionalGeneration, exist_ok=True)


FAMILY = Family(
    model_type=ToyConfig.model_type,
    name="Toy BART",
    presets=tuple(PRESETS),
    route="seq2seq",
    config_class=ToyConfig,
    new_config=new_config,
    new_tokenizer=new_tokenizer,
    card=card,
    register_auto=register_auto,
)
register_family(FAMILY)
"""


@pytest.fixture
def toy_family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The toy family's folder, imported (which registers it); unregistered afterwards."""
    package = tmp_path / "toy_family_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in (
        ("configuration_toy.py", TOY_CONFIGURATION),
        ("modeling_toy.py", TOY_MODELING),
        ("family.py", TOY_FAMILY),
    ):
        (package / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("toy_family_pkg.family")
    yield module.FAMILY
    registry.unregister_family(module.FAMILY.model_type)
    for name in [name for name in sys.modules if name.startswith("toy_family_pkg")]:
        del sys.modules[name]


@pytest.mark.slow
def test_a_new_family_trains_evaluates_saves_and_loads_with_the_cli_unchanged(
    toy_family, prop_data: Path, tmp_path: Path, capsys
) -> None:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    assert registry.family_of_preset("toy-tiny") is toy_family
    output = tmp_path / "run"
    common = ["--data", str(prop_data), "--output", str(output)]
    assert main(["train", "--task", "prop", "--preset", "toy-tiny", *common, "--steps", "4", "--batch-size", "8",
                 "--eval-steps", "4", "--eval-samples", "8", "--beam", "1"]) == 0  # fmt: skip
    model_folder = output / "model"
    assert "saved the model to" in capsys.readouterr().out
    card = (model_folder / "README.md").read_text()
    assert card.startswith("# Toy BART for prop") and "d_model 16" in card
    assert json.loads((model_folder / "config.json").read_text())["model_type"] == "toy_bart"

    model = AutoModelForSeq2SeqLM.from_pretrained(model_folder)
    tokenizer = AutoTokenizer.from_pretrained(model_folder)
    assert type(model).__name__ == "ToyForConditionalGeneration" and model.config.d_model == 16
    assert tokenizer.vocab_size == model.config.vocab_size

    report = tmp_path / "eval.json"
    assert main(["evaluate", str(output), "--data", str(prop_data), "--limit", "6", "--beam", "1",
                 "--alpha-symbols", "3", "--alpha-samples", "2", "--max-perm", "2", "--report", str(report),
                 "--heatmap", str(tmp_path / "heatmap.png")]) == 0  # fmt: skip
    written = json.loads(report.read_text())
    assert written["count"] == 6 and set(written["alpha_covariance"]) == {"3"}

    capsys.readouterr()
    assert main(["solve", str(model_folder), "& a | b c"]) == 0
    answer = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("1. "))
    assert answer.rstrip().endswith(("[correct]", "[incorrect]", "[invalid]"))


def test_the_registry_refuses_a_second_family_of_a_type_or_a_taken_preset(toy_family) -> None:
    from dataclasses import replace

    with pytest.raises(ValueError, match="model_type 'toy_bart' is already registered"):
        registry.register_family(replace(toy_family, name="Other", presets=("toy-other",)))
    with pytest.raises(ValueError, match="preset\\(s\\) prop-best belong to Symbol-Invariant Transformer"):
        registry.register_family(replace(toy_family, model_type="toy_two", presets=("prop-best",)))
    with pytest.raises(ValueError, match="unknown route 'graph'"):
        registry.register_family(replace(toy_family, model_type="toy_three", presets=(), route="graph"))


def test_every_built_in_family_is_found_by_model_type_preset_and_saved_folder(tmp_path: Path) -> None:
    from hf_symbolinv.models import BUILT_IN_FAMILIES

    by_type = {family.model_type: family for family in registry.families()}
    assert set(BUILT_IN_FAMILIES) <= set(by_type)
    assert registry.family_of_preset("prop-best").model_type == "symbolinv"
    assert registry.family_of_preset("folnet-small").model_type == "folnet"
    assert registry.family_of_preset("dte-small").route == "tree"
    with pytest.raises(ValueError, match="unknown preset 'prop-bets'; choose one of .*prop-best"):
        registry.family_of_preset("prop-bets")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "dte"}))
    assert registry.folder_route(tmp_path).name == "tree"
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "folnet"}))
    assert registry.folder_route(tmp_path).name == "seq2seq"
