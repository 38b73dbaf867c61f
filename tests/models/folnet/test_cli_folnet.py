"""The CLI takes the FOLNet family: a FOLNet preset trains a FOLNet for the task's vocabulary, and evaluate and
solve run it like any other seq2seq model of the package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dataset_builders
from dataset_builders.params import BuildOptions
from hf_symbolinv.commands import main
from hf_symbolinv.models.registry import new_model_config

TINY = ["num_layers=1", "decoder_layers=1", "num_heads=2", "head_dim=8", "binary_dim=4", "ffn_dim=16"]


@pytest.fixture(scope="module")
def kinship_data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("kinship") / "data"
    dataset_builders.build("kinship", folder, BuildOptions(num_samples=120, seed=0, workers=1, progress=False))
    return folder


def _train(data: Path, output: Path, *settings: str, task: str = "kinship", preset: str = "folnet-tiny") -> int:
    argv = ["train", "--task", task, "--preset", preset, "--data", str(data), "--output", str(output)]
    argv += ["--steps", "4", "--batch-size", "8", "--eval-samples", "4"]
    tiny = TINY if preset.startswith("folnet") else []
    return main([*argv, "--set", *tiny, *settings])


@pytest.mark.slow
def test_a_folnet_preset_trains_evaluates_and_solves(kinship_data: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "run"
    assert _train(kinship_data, output, "symbol_invariant=true", "operators=join,assoc,bool") == 0
    model = output / "model"
    config = json.loads((model / "config.json").read_text())
    assert config["model_type"] == "folnet" and config["symbol_invariant"] is True
    assert config["vocabulary"] == "kinship" and config["operators"] == ["join", "assoc", "bool"]
    assert config["token_arities"] is None  # stories are no formulas: no parse-tree relations
    card = (model / "README.md").read_text()
    assert "FOLNet (renaming-invariant): kinship" in card and "join, assoc, bool" in card
    assert "invariant to renaming by construction" in card and "same symbol" in card
    # The saved generation settings are the token ids only (a stored max_length would clash with max_new_tokens).
    assert set(json.loads((model / "generation_config.json").read_text())) <= {
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "decoder_start_token_id",
        "transformers_version",
        "_from_model_config",
    }
    args = ["--limit", "12", "--beam", "1", "--alpha-symbols", "3", "--max-perm", "4", "--alpha-samples", "3"]
    assert main(["evaluate", str(output), "--data", str(kinship_data), *args]) == 0
    report = json.loads((model / "eval-test.json").read_text())
    # Measured (an untrained model's near-tied pointer scores make its exact value a matter of float rounding;
    # the invariance itself is checked exactly in tests/models/folnet).
    # Up to 3 inputs of 3 symbols, 4 renamings each: the mean of fractions of agreeing renamings out of 4.
    covariance = report["alpha_covariance"]["3"]
    assert report["count"] == 12 and any(abs(n * covariance - round(n * covariance)) < 1e-9 for n in (4, 8, 12))
    capsys.readouterr()
    assert main(["solve", str(output), "ann father bo , bo sister cy ? ann cy", "--beam", "1"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("answered by: ") and "\n1. " in printed  # the model that answered, then its answer
    assert any(state in printed for state in ("[correct]", "[incorrect]", "[invalid]"))


def test_a_folnet_preset_gets_the_tasks_vocabulary_and_tree() -> None:
    prop = new_model_config("folnet-small", "prop", symbol_invariant=True)
    assert prop.vocabulary == "prop" and prop.num_base_tokens == 10 and prop.token_arities == [0] * 5 + [1] + [2] * 4
    assert prop.num_symbol_slots == 64 and (prop.eos_token_id, prop.decoder_start_token_id) == (1, 2)
    kinship = new_model_config("folnet-small", "kinship", vocab_size=60)
    assert kinship.token_arities is None and kinship.num_symbol_slots == 60 - kinship.num_base_tokens


@pytest.mark.parametrize(
    "settings, preset, task, message",
    [
        (["operators=join,foo"], "folnet-tiny", "kinship", "FOLNetConfig.operators: unknown operator 'foo'"),
        (["num_heads=two"], "folnet-tiny", "kinship", "--set num_heads='two': expected int"),
        (["stream_attention=EP"], "folnet-tiny", "kinship", "FOLNetConfig has no field 'stream_attention'"),
        ([], "folnet-huge", "kinship", "--preset: unknown preset 'folnet-huge'; choose one of"),
        ([], "prop-best", "kinship", "preset `prop-best` is for the 'prop' vocabulary, not task 'kinship'"),
        # Fields the task and its tokenizer fix: refused naming both values, never replaced without a word.
        (["pad_token_id=5"], "folnet-tiny", "kinship", "--set pad_token_id=5: task 'kinship' and its tokenizer fix"),
        (["eos_token_id=40"], "folnet-tiny", "kinship", "fix eos_token_id to 1"),
        (["vocabulary=prop"], "folnet-tiny", "kinship", "--set vocabulary='prop': task 'kinship'"),
        (["vocab_size=999"], "dte-small", "tree", "its tokenizer fix vocab_size to "),
        (["vocabulary=prop"], "dte-small", "tree", "fix vocabulary to 'tree'"),
    ],
)
def test_bad_folnet_settings_are_one_line(
    kinship_data: Path, tmp_path: Path, capsys, settings: list[str], preset: str, task: str, message: str
) -> None:
    assert _train(kinship_data, tmp_path / "bad", *settings, task=task, preset=preset) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and message in error and "\n" not in error
    assert not (tmp_path / "bad" / "model").exists()


def test_embedding_type_is_refused_for_folnet(kinship_data: Path, tmp_path: Path, capsys) -> None:
    argv = ["train", "--task", "kinship", "--preset", "folnet-tiny", "--embedding-type", "fixed"]
    assert main([*argv, "--data", str(kinship_data), "--output", str(tmp_path / "x")]) == 2
    assert "--embedding-type is for Symbol-Invariant Transformer presets, not `folnet-tiny`" in capsys.readouterr().err


def test_a_folder_without_its_tokenizer_is_one_line_naming_the_file(tmp_path: Path, capsys) -> None:
    from transformers import AutoModelForSeq2SeqLM

    AutoModelForSeq2SeqLM.from_config(new_model_config("folnet-tiny", "prop")).save_pretrained(tmp_path / "m")
    capsys.readouterr()  # the save's own progress bar
    assert main(["solve", str(tmp_path / "m"), "& a b"]) == 2
    err = capsys.readouterr().err.strip()
    assert "has no tokenizer_config.json" in err and "sentencepiece" not in err and "\n" not in err
