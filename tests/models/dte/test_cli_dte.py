"""The CLI and evaluation take the tree family: `data build --max-depth`, `train --task tree|nnf` with a DTE
preset (and `--init-from` a DTE folder), `evaluate` by tree match and, for NNF, by equivalence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import DTE_SOURCES as SOURCES
from helpers import dte_tokenizer as tokenizer
from helpers import dte_trained_model as trained_model
from helpers import mirror_text as mirror

from hf_symbolinv.commands import main
from hf_symbolinv.evaluation import tree as tree_evaluation
from hf_symbolinv.evaluation.tree import evaluate_tree_model
from hf_symbolinv.models.dte import DTEForTreeTransduction
from hf_symbolinv.utils.trees import parse_bracketed

TINY = ["max_depth=6", "num_steps=3", "d_model=16", "num_heads=2", "ffn_dim=32", "filler_dim=8"]


def _depth(tree) -> int:
    return 0 if isinstance(tree, str) or tree is None else 1 + max(_depth(tree[1]), _depth(tree[2]))


@pytest.fixture(scope="module")
def tree_data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("trees") / "data"
    argv = ["data", "build", "car-cdr-seq", "--out", str(folder), "--num-samples", "60", "--max-size", "3"]
    assert main([*argv, "--max-depth", "6", "--quiet"]) == 0
    return folder


def _train(data: Path, output: Path, preset: str, *extra: str, task: str = "tree") -> int:
    argv = ["train", "--task", task, "--preset", preset, "--data", str(data), "--output", str(output)]
    return main([*argv, "--steps", "2", "--batch-size", "4", "--eval-samples", "4", *extra, "--set", *TINY])


def test_data_build_max_depth_bounds_every_tree(tree_data: Path) -> None:
    import datasets

    data = datasets.load_dataset(str(tree_data))
    depths = [_depth(parse_bracketed(text)) for split in data.values() for text in [*split["input"], *split["target"]]]
    assert max(depths) == 6


def test_max_depth_is_refused_for_other_configurations(tmp_path: Path, capsys) -> None:
    assert main(["data", "build", "copy-small", "--out", str(tmp_path / "d"), "--max-depth", "4"]) == 2
    assert "--max-depth applies to the tree configurations only" in capsys.readouterr().err
    assert main(["data", "build", "car-cdr-seq", "--out", str(tmp_path / "t"), "--max-depth", "13"]) == 2
    assert "no DTE model takes trees deeper than 12" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


@pytest.mark.slow
def test_a_dte_preset_trains_evaluates_and_fine_tunes(tree_data: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    output = tmp_path / "run"
    assert _train(tree_data, output, "tdte-small", "--set", "num_experts=2", "top_k=1") == 0
    model_dir = output / "model"
    config = json.loads((model_dir / "config.json").read_text())
    assert config["model_type"] == "dte" and config["vocabulary"] == "tree" and config["termination"] == "sluggish"
    assert config["top_k"] == 1 and config["max_depth"] == 6
    assert "Terminating" in (model_dir / "README.md").read_text()
    assert main(["evaluate", str(output), "--data", str(tree_data), "--split", "test_ood_lexical", "--limit", "5"]) == 0
    report = json.loads((model_dir / "eval-test_ood_lexical.json").read_text())
    assert report["count"] == 5 and len(report["answers"]) == 5 and 1 <= report["num_steps"] <= 3
    capsys.readouterr()
    # Options a tree model has no use for are refused rather than ignored.
    for option in (["--beam", "5"], ["--top-n", "3"], ["--alpha-symbols", "2"], ["--heatmap", str(tmp_path / "h.png")]):
        assert main(["evaluate", str(output), "--data", str(tree_data), "--report", str(tmp_path / "r"), *option]) == 2
        assert f"{option[0]} do(es) not apply to a tree model" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not (tmp_path / "h.png").exists()
    # A tokenizer with two base labels swapped has every size right: its labels, in order, are refused.
    import shutil

    swapped = tmp_path / "swapped"
    shutil.copytree(model_dir, swapped)
    record = json.loads((swapped / "dte_tokenizer.json").read_text())
    record["base_labels"][0], record["base_labels"][1] = record["base_labels"][1], record["base_labels"][0]
    (swapped / "dte_tokenizer.json").write_text(json.dumps(record))
    assert main(["evaluate", str(swapped), "--data", str(tree_data), "--report", str(tmp_path / "r2")]) == 2
    assert "does not match the model's task: label 2 is" in capsys.readouterr().err
    source = "(CAR (NP the king) (VP ran (NP the dog)))"
    assert main(["solve", str(output), source]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("1. ") and "steps]" in printed
    assert main(["solve", str(output), source[:-1]]) == 2
    assert "unbalanced bracket: '(' at position 0 is never closed" in capsys.readouterr().err
    # Several inputs: the model loads once, good inputs are answered, a bad one is named, the exit status says so.
    from hf_symbolinv.commands import tree_route

    loads = []
    real_load = tree_route.load_tree_folder
    monkeypatch.setattr(tree_route, "load_tree_folder", lambda folder: loads.append(folder) or real_load(folder))
    assert main(["solve", str(output), source, source[:-1], source]) == 2
    out, err = capsys.readouterr()
    assert len(loads) == 1 and out.count("steps]") == 2 and out.count("input: ") == 3
    assert err.count("error: ") == 1 and "never closed" in err
    # The saved folder is a model of the family: it loads as one and fine-tunes with --init-from.
    assert isinstance(DTEForTreeTransduction.from_pretrained(model_dir), DTEForTreeTransduction)
    tuned = tmp_path / "tuned"
    argv = ["train", "--task", "tree", "--init-from", str(output), "--data", str(tree_data), "--output", str(tuned)]
    assert main([*argv, "--steps", "1", "--batch-size", "4", "--eval-samples", "2"]) == 0
    assert (tuned / "model" / "model.safetensors").is_file()
    # A setting that leaves every weight as it is may change on the way (the model records it); another may not.
    chosen = tmp_path / "chosen"
    argv = ["train", "--task", "tree", "--init-from", str(output), "--data", str(tree_data), "--output", str(chosen)]
    capsys.readouterr()
    assert main([*argv, "--steps", "1", "--batch-size", "4", "--set", "num_steps=2"]) == 2
    assert "--set num_steps: a model loaded with --init-from keeps its architecture; it may change only hardness" in (
        capsys.readouterr().err
    )
    assert main([*argv, "--steps", "1", "--batch-size", "4", "--set", "hardness=2"]) == 2
    assert "hardness" in capsys.readouterr().err and not (chosen / "model").exists()
    sets = ["--set", "hardness=1.0", "controller_depth=1"]
    assert main([*argv, "--steps", "1", "--batch-size", "4", "--eval-samples", "2", *sets]) == 0
    config = json.loads((chosen / "model" / "config.json").read_text())
    assert config["hardness"] == 1.0 and config["controller_depth"] == 1 and config["num_steps"] == 3
    assert "with hardness=1.0, controller_depth=1" in (chosen / "model" / "README.md").read_text()


@pytest.mark.parametrize(
    ("preset", "task", "extra", "message"),
    [
        ("dte-small", "prop", [], "is for the tree tasks"),
        ("prop-best", "tree", [], "for the Differentiable Tree Experts family: choose one of its presets (dtm-small"),
        ("dtm-small", "tree", ["--bf16"], "--bf16: not options of the tree route"),
        ("dtm-small", "tree", ["--targets", "dataset"], "--targets: not options of the tree route"),
        ("dtm-small", "tree", ["--curriculum", "5"], "--curriculum: not options of the tree route"),
        ("dtm-small", "tree", ["--augment", "commute"], "--augment: not options of the tree route"),
        ("dtm-small", "tree", ["--set", "num_step=3"], "has no field 'num_step' (did you mean num_steps?)"),
    ],
)
def test_bad_tree_training_is_refused_in_one_line(tree_data, tmp_path, capsys, preset, task, extra, message) -> None:
    argv = ["train", "--task", task, "--preset", preset, "--data", str(tree_data), "--output", str(tmp_path / "o")]
    assert main([*argv, "--steps", "1", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_evaluate_tree_model_counts_tree_matches() -> None:
    # A model trained on mirroring: the evaluation's verdicts are the answers compared with the references.
    model, tok = trained_model(), tokenizer()
    targets = [mirror(text) for text in SOURCES]
    report = evaluate_tree_model(model, tok, "tree", SOURCES, targets, sizes=[1, 1, 2, 2], batch_size=3)
    matches = [parse_bracketed(a) == parse_bracketed(t) for a, t in zip(report["answers"], targets)]
    assert report["correct"] == report["exact"] == sum(matches) / 4
    assert len(set(report["answers"])) > 1  # real answers (the tiny model is not good enough to get them right)
    assert report["correct_by_size"] == {1: sum(matches[:2]) / 2, 2: sum(matches[2:]) / 2}
    assert report["num_steps"] == model.config.num_steps
    # num_steps= runs another number of steps than the config's.
    assert evaluate_tree_model(model, tok, "tree", SOURCES, targets, num_steps=2)["num_steps"] == 2


def test_tree_answers_are_judged_by_the_tree(monkeypatch) -> None:
    references = ["(f a (g b c))", "(f a b)", "(g a b)", "(f a b)"]
    answers = ["(f  a (g b c) )", "(f b a)", "(g a", "(f a (b))"]  # spacing only; wrong; no tree; no tree
    monkeypatch.setattr(tree_evaluation, "predict_trees", lambda *args, **kwargs: (answers, 4))
    report = evaluate_tree_model(torch.nn.Identity(), None, "tree", references, references, sizes=[3, 1, 1, 1])
    assert (report["correct"], report["exact"], report["invalid"]) == (0.25, 0.25, 0.5)
    assert report["correct_by_size"] == {1: 0.0, 3: 1.0}


def test_nnf_answers_are_judged_by_equivalence(monkeypatch) -> None:
    sources = ["! & a b", "! | a b", "! ! a", "& a b"]
    answers = ["| ! a ! b", "& ! b ! a", "a b", "| a b"]  # reference; equivalent reordering; no formula; wrong
    references = ["| ! a ! b", "& ! a ! b", "a", "& a b"]
    monkeypatch.setattr(tree_evaluation, "predict_trees", lambda *args, **kwargs: (answers, 5))
    report = evaluate_tree_model(torch.nn.Identity(), None, "nnf", sources, references)
    assert (report["correct"], report["exact"], report["invalid"]) == (0.5, 0.25, 0.25)


def test_a_tree_deeper_than_the_model_is_named_before_training(tree_data: Path, tmp_path: Path, capsys) -> None:
    # The data reaches depth 6; a model of depth 5 cannot hold it: the row is named, no training starts.
    argv = ["train", "--task", "tree", "--preset", "dtm-small", "--data", str(tree_data), "--output", str(tmp_path)]
    assert main([*argv, "--steps", "1", "--set", *TINY, "max_depth=5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: train split row ") and "deeper than max_depth=5" in err
    assert "has depth 6" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "checkpoints").exists() or not any((tmp_path / "checkpoints").iterdir())


def test_the_tree_route_trains_compiled_with_one_graph(tree_data: Path, tmp_path: Path) -> None:
    """A tree batch has the same shapes whatever its trees: one graph for the run (the last batch's size aside)."""
    assert _train(tree_data, tmp_path / "run", "dtm-small", "--compile", "aot_eager") == 0
    state = json.loads((tmp_path / "run" / "checkpoints" / "checkpoint-2" / "trainer_state.json").read_text())
    graphs = [entry["compiled_graphs"] for entry in state["log_history"]]
    assert graphs and graphs[-1] == 1


def test_a_tree_run_records_its_checkpoints_and_refuses_a_resume_with_another_lr(
    tree_data: Path, tmp_path: Path, capsys
) -> None:
    output = tmp_path / "run"
    assert _train(tree_data, output, "tdte-small", "--set", "num_experts=2", "top_k=1") == 0
    record = json.loads((output / "checkpoints" / "checkpoint-2" / ".symbolinv-written.json").read_text())
    assert record["options"]["learning_rate"] == 1e-3 and "model.safetensors" in record["sizes"]
    capsys.readouterr()
    argv = ["--steps", "4", "--lr", "0.5", "--set", "num_experts=2", "top_k=1"]
    assert _train(tree_data, output, "tdte-small", *argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--lr 0.001 -> 0.5" in err


@pytest.mark.parametrize(("option", "value", "expected"), [("--warmup-steps", "3", 3), ("--warmup-ratio", "0.5", 2)])
def test_a_tree_run_takes_its_warm_up(tree_data: Path, tmp_path: Path, option, value, expected) -> None:
    output = tmp_path / "run"
    assert _train(tree_data, output, "dtm-small", "--steps", "4", option, value) == 0
    state = json.loads((output / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())
    rates = [entry["learning_rate"] for entry in state["log_history"] if "learning_rate" in entry]
    # Linear warm-up from 0 to 1e-3 over `expected` steps (the recipe's 5% would reach it after the first).
    assert rates[: expected + 1] == pytest.approx([1e-3 * step / expected for step in range(expected + 1)])
    record = json.loads((output / "checkpoints" / "checkpoint-4" / ".symbolinv-written.json").read_text())
    assert record["options"]["warmup"] == float(value)


def test_the_tree_route_stops_at_the_time_limit_and_resumes(tree_data: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "run"
    # A limit shorter than one step: the run stops after its first step, with a checkpoint and no model.
    assert _train(tree_data, output, "dte-small", "--time-limit", "1e-6") == 0
    assert "stopped at step 1 of 2 after the time limit" in capsys.readouterr().out
    assert [c.name for c in (output / "checkpoints").iterdir()] == ["checkpoint-1"]
    assert not (output / "model").exists()
    assert _train(tree_data, output, "dte-small") == 0  # the same command continues to the end
    assert (output / "model" / "config.json").is_file()
