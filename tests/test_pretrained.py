"""The trained checkpoints that ship with the package, and ``symbolinv solve`` choosing among them."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from hf_symbolinv import logic, pretrained
from hf_symbolinv.commands import main
from hf_symbolinv.evaluation import judge
from hf_symbolinv.pretrained import SHIPPED, shipped_model

#: The most bytes each shipped weights file may take (the small models: 4 MB, as promised in their issue).
MAX_BYTES = {
    "prop-small": 4 * 10**6,
    "ltl-small": 4 * 10**6,
    "prop-35": 4 * 10**6,
    "ltl-35": 4 * 10**6,
    "clutrr": 5 * 2**20,
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_checkpoint_is_small_half_precision_and_loads(name: str) -> None:
    folder = shipped_model(name)
    weights = folder / "model.safetensors"
    assert weights.stat().st_size <= MAX_BYTES[name]
    with safe_open(str(weights), "pt") as handle:
        dtypes = {handle.get_slice(tensor).get_dtype() for tensor in handle.keys()}
    assert dtypes == {"F16"}
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert model.config.vocabulary == SHIPPED[name] and tokenizer.task_vocabulary.name == SHIPPED[name]
    tokenizer.check_matches(model.config)  # config, weights and tokenizer agree
    # Only the generation settings the model needs: a stored max_length would clash with every max_new_tokens.
    assert model.generation_config.max_length is None and model.generation_config.num_beams is None
    # Weights, config, tokenizer, generation config and card (and the measured choice table solve reads): no code,
    # and no config entry pointing at code.
    held = {path.name for path in folder.iterdir()}
    assert held - {pretrained.CHOICE_TABLE} == {
        ".symbolinv-written.json",
        "README.md",
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer_config.json",
    }
    for written in ("config.json", "tokenizer_config.json"):
        assert "auto_map" not in json.loads((folder / written).read_text(encoding="utf-8"))
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "symbolinv train" in card and "correct" in card and f'shipped_model("{name}")' in card
    # No path of the machine that trained it: the config names the folder.
    assert json.loads((folder / "config.json").read_text(encoding="utf-8"))["_name_or_path"] == name


@pytest.mark.slow
def test_an_exported_shipped_model_loads_where_the_package_is_not_installed(tmp_path) -> None:
    import subprocess
    import sys
    import textwrap

    folder = tmp_path / "ltl-small"
    assert main(["export", "ltl-small", str(folder)]) == 0
    assert {"modeling_symbolinv.py", "tokenization_symbolinv.py", "pipeline_symbolinv.py"} <= {
        path.name for path in folder.glob("*.py")
    }
    with safe_open(str(folder / "model.safetensors"), "pt") as handle:  # the weights as they ship
        assert {handle.get_slice(tensor).get_dtype() for tensor in handle.keys()} == {"F16"}
    script = textwrap.dedent(f"""
        import sys
        sys.modules["hf_symbolinv"] = None  # as where the package is not installed
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        model = AutoModelForSeq2SeqLM.from_pretrained({str(folder)!r}, trust_remote_code=True, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained({str(folder)!r}, trust_remote_code=True)
        assert not type(model).__module__.startswith("hf_symbolinv"), type(model).__module__
        ids = tokenizer(["&aXb"], return_tensors="pt")
        out = model.generate(**ids, num_beams=3, max_new_tokens=20)
        print("ANSWER", tokenizer.decode(out[0], skip_special_tokens=True))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = done.stdout.split("ANSWER ", 1)[1].strip()
    assert judge("ltl", "&aXb", answer).correct, answer  # the same model as with the package: a, then b


def test_export_refuses_a_folder_of_someone_elses_files_and_an_unknown_name(tmp_path, capsys) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me", encoding="utf-8")
    assert main(["export", "prop-small", str(tmp_path / "mine")]) == 2
    assert "notes.txt" in capsys.readouterr().err
    assert (tmp_path / "mine" / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert main(["export", "prop-huge", str(tmp_path / "new")]) == 2
    assert "prop-huge" in capsys.readouterr().err and not (tmp_path / "new").exists()


def test_shipped_model_takes_a_name_or_a_task() -> None:
    assert shipped_model("prop") == shipped_model("prop-35")
    assert shipped_model("ltl") == shipped_model("ltl-35")
    with pytest.raises(ValueError, match="no trained model 'kinship' ships.*prop-small"):
        shipped_model("kinship")
    with pytest.raises(ValueError, match="'ltl-best' no longer ships: ltl-35 replaces it"):
        shipped_model("ltl-best")


def _write_table(folder, task: str, cells: dict[int, dict[int, list[int]]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    table = {"task": task, "cells": {str(k): {str(n): c for n, c in row.items()} for k, row in cells.items()}}
    (folder / pretrained.CHOICE_TABLE).write_text(json.dumps(table))


def test_solve_asks_the_model_whose_measured_table_is_best_for_the_formula(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", tmp_path)
    monkeypatch.setattr(pretrained, "SHIPPED", {"small": "prop", "big": "prop", "temporal": "ltl"})
    monkeypatch.setattr(pretrained, "DEFAULT_FOR_TASK", {"prop": "small", "ltl": "temporal"})
    # small: best on small formulas; big: best on large ones, and on 5 symbols of the middle band only.
    _write_table(tmp_path / "small", "prop", {3: {5: [95, 100], 15: [90, 100], 30: [60, 100]}, 5: {15: [40, 100]}})
    _write_table(tmp_path / "big", "prop", {3: {5: [80, 100], 15: [85, 100], 30: [75, 100]}, 5: {15: [80, 100]}})
    assert pretrained.model_for("prop", 4) == tmp_path / "small"
    assert pretrained.model_for("prop", 30) == tmp_path / "big"
    assert pretrained.model_for("prop", 50) == tmp_path / "big"  # beyond the table: its largest band
    assert pretrained.model_for("prop", 15, num_symbols=3) == tmp_path / "small"
    assert pretrained.model_for("prop", 15, num_symbols=5) == tmp_path / "big"
    assert pretrained.model_for("prop", 15, num_symbols=9) == tmp_path / "big"  # more symbols: the largest count
    # Without the symbol count, the band pooled over every count: small 130/200, big 165/200.
    assert pretrained.model_for("prop", 15) == tmp_path / "big"
    # No model of the task has a table: the task's default.
    assert pretrained.model_for("ltl", 10) == tmp_path / "temporal"


def test_a_thin_cell_is_pooled_with_its_band_and_a_tie_goes_to_the_better_table(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", tmp_path)
    monkeypatch.setattr(pretrained, "SHIPPED", {"small": "prop", "big": "prop"})
    _write_table(tmp_path / "small", "prop", {2: {5: [50, 50]}, 4: {5: [1, 2]}})
    _write_table(tmp_path / "big", "prop", {2: {5: [40, 50]}, 4: {5: [2, 2]}})
    # Two formulas of 4 symbols say little: the band's 52 formulas decide (51 against 42).
    assert pretrained.model_for("prop", 5, num_symbols=4) == tmp_path / "small"
    # The same tables: the first shipped.
    _write_table(tmp_path / "big", "prop", {2: {5: [50, 50]}, 4: {5: [1, 2]}})
    assert pretrained.model_for("prop", 5, num_symbols=4) == tmp_path / "small"
    # A tie on the formula's cell goes to the better band: 3 symbols tie (40 of 40), the band reads 75 against 70.
    _write_table(tmp_path / "small", "prop", {3: {5: [40, 40], 25: [10, 40]}, 4: {5: [30, 40]}})
    _write_table(tmp_path / "big", "prop", {3: {5: [40, 40], 25: [30, 40]}, 4: {5: [35, 40]}})
    assert pretrained.model_for("prop", 5, num_symbols=3) == tmp_path / "big"
    # A tie on the band too goes to the better table: the large formulas decide (30 against 10 of 40).
    _write_table(tmp_path / "small", "prop", {3: {5: [40, 40], 25: [10, 40]}})
    _write_table(tmp_path / "big", "prop", {3: {5: [40, 40], 25: [30, 40]}})
    assert pretrained.model_for("prop", 5, num_symbols=3) == tmp_path / "big"
    assert pretrained.model_for("prop", 25, num_symbols=3) == tmp_path / "big"


def test_a_damaged_choice_table_is_named(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", tmp_path)
    monkeypatch.setattr(pretrained, "SHIPPED", {"small": "prop"})
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / pretrained.CHOICE_TABLE).write_text('{"task": "prop", "cells": [1, 2')
    with pytest.raises(ValueError, match=r"small/evaluation.json: not a choice table"):
        pretrained.model_for("prop", 5)


def test_every_shipped_logic_model_has_a_measured_choice_table() -> None:
    for name, task in SHIPPED.items():
        if task not in ("prop", "ltl"):  # the shipped clutrr model is the only one of its task: nothing to choose
            continue
        table = pretrained.choice_table(name)
        assert table is not None, f"{name} has no {pretrained.CHOICE_TABLE}: run benchmarks/paper_distribution.py"
        assert table["task"] == task
        assert sum(count for row in table["cells"].values() for _, count in row.values()) >= 500


def _answers(capsys: pytest.CaptureFixture[str]) -> list[tuple[str, str]]:
    """(the answer as the model writes it, the verdict) of each ranked answer ``solve`` printed."""
    lines = capsys.readouterr().out.splitlines()
    ranked = [k for k, line in enumerate(lines) if line[:1].isdigit()]
    return [
        (lines[k + 1].split(": ", 1)[1], lines[k].rsplit("    ", 1)[1])
        for k in ranked  # the line under it: Polish
    ]


def _first_ranked(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("1. "))


def test_solve_without_a_model_answers_a_propositional_formula(capsys: pytest.CaptureFixture[str]) -> None:
    text = "& a | b ! c"
    assert main(["solve", text]) == 0
    [(answer, verdict)] = _answers(capsys)
    # The verdict printed is the checker's on the model's own answer.
    correct = logic.check_assignment(logic.parse_prop(text), logic.parse_assignment(answer))
    assert verdict == ("[correct]" if correct else "[incorrect]")
    assert verdict == "[correct]"  # the shipped model solves this formula (beam 3), a fixed, deterministic fact


def test_solve_without_a_model_answers_an_ltl_formula_with_the_ltl_model(capsys: pytest.CaptureFixture[str]) -> None:
    text = "& req X grant"
    assert main(["solve", text]) == 0
    out = capsys.readouterr().out
    verdict = _first_ranked(out).rsplit(maxsplit=1)[1]
    assert verdict == "[correct]"  # a fixed, deterministic fact of the shipped LTL model
    assert "1. trace " in out and "in Polish: " in out  # LTL answers come as a trace in both notations
    # A formula without temporal operators is propositional unless --task says LTL.
    assert main(["solve", "--task", "ltl", "& a ! b"]) == 0
    assert "1. trace " in capsys.readouterr().out


@pytest.mark.slow
def test_solve_runs_on_one_thread_unless_told(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        torch.set_num_threads(2)
        assert main(["solve", "& a b"]) == 0
        assert torch.get_num_threads() == 1  # one small input: more threads only spin on a busy machine
        assert main(["--threads", "2", "solve", "& a b"]) == 0
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        assert main(["solve", "& a b"]) == 0
        assert torch.get_num_threads() == 2  # the user's OMP_NUM_THREADS is honoured
    finally:
        torch.set_num_threads(before)
    with pytest.raises(SystemExit):
        main(["--threads", "0", "solve", "& a b"])
    assert "argument --threads: must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["| P Q"],
        ["& A | B ! C"],
        ["& _ b"],
        ["& Req X Grant"],
        ["& α | β ! γ"],
        ["| Müller Schmidt"],
        ["--symbols", r"[^\W\d_]+", "& α | β ! γ"],
    ],
)
def test_solve_judges_answers_in_the_names_people_write(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # Upper-case, underscore and non-ASCII names: the verdict reads the answer with the rule that read the input.
    assert main(["solve", *argv]) == 0
    first = _first_ranked(capsys.readouterr().out)
    assert first.endswith("[correct]"), first  # the renamed formula's answer, as for `| a b`, `& a | b ! c`, ...


@pytest.mark.parametrize("formula", ["& G a F b", "-> a b", "U a <-> b c", "W a b"])
def test_solve_reads_operators_the_model_has_no_token_for(formula: str, capsys: pytest.CaptureFixture[str]) -> None:
    # G, F, W, -> and (for LTL) <-> are rewritten into the model's operators; the answer is judged on the input.
    assert main(["solve", formula]) == 0
    first = _first_ranked(capsys.readouterr().out)
    assert first.startswith("1. ") and first.endswith(("[correct]", "[incorrect]")), first


def test_solve_refuses_unspaced_names_it_cannot_split_naming_the_remedy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "&α|β!γ"]) == 2
    err = capsys.readouterr().err
    assert "found 'α'" in err and "--symbols" in err and "Traceback" not in err


@pytest.mark.slow
def test_the_pipeline_answers_on_one_thread_and_gives_the_threads_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import pipeline

    folder = shipped_model("prop-small")
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, dtype=torch.float32).eval()
    pipe = pipeline("symbolic-generation", model=model, tokenizer=AutoTokenizer.from_pretrained(folder))
    seen = []
    real = model.generate
    monkeypatch.setattr(model, "generate", lambda **kwargs: seen.append(torch.get_num_threads()) or real(**kwargs))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        pipe("& a b", num_beams=3)
        assert seen == [1] and torch.get_num_threads() == 2
        monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the user's choice stays
        pipe("& a b", num_beams=3)
        assert seen == [1, 2]
    finally:
        torch.set_num_threads(before)


def test_solve_says_when_no_answer_can_be_correct(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "& a ! a"]) == 0
    assert "the formula is unsatisfiable" in capsys.readouterr().out
    assert main(["solve", "& a ! b"]) == 0
    assert "unsatisfiable" not in capsys.readouterr().out


def test_solve_without_a_model_refuses_what_no_shipped_model_reads(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "& a ("]) == 2
    err = capsys.readouterr().err
    assert "position 4" in err and "found '('" in err and "Traceback" not in err
    assert main(["solve", "--task", "prop", "& req X grant"]) == 2
    assert "temporal operator 'X'" in capsys.readouterr().err
    # An unquoted formula arrives as several inputs: the piece that is no formula is refused with a hint (the
    # others are answered; the exit status says one failed).
    assert main(["solve", "&", "a"]) == 2
    assert "quote an INPUT with spaces" in capsys.readouterr().err


def test_solve_takes_inputs_after_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(shipped_model("prop-small"))
    assert main(["solve", folder, "--symbols", r"[A-Z]\w*", "| Rain Snow"]) == 0
    assert _first_ranked(capsys.readouterr().out).endswith("[correct]")
    with pytest.raises(SystemExit):
        main(["solve", folder, "--beam", "3", "& a b", "--frobnicate"])
    assert "unrecognized arguments: --frobnicate" in capsys.readouterr().err


def test_solve_answers_several_inputs_loading_each_model_once(monkeypatch, capsys) -> None:
    from hf_symbolinv.models import folders

    loads = []
    real = folders.load_model
    monkeypatch.setattr(folders, "load_model", lambda path, **kwargs: loads.append(path) or real(path, **kwargs))
    assert main(["solve", "& a b", "| c d", "& req X grant", "! e"]) == 0
    out, err = capsys.readouterr()
    assert "Loading weights" not in err  # no progress bar for a model of a few MB
    assert [line for line in out.splitlines() if line.startswith("input: ")] == [
        "input: & a b",
        "input: | c d",
        "input: & req X grant",
        "input: ! e",
    ]
    # Each model once, whichever the choice tables give these inputs.
    chosen = {pretrained.model_for("prop", 3, 2), pretrained.model_for("prop", 2, 1), pretrained.model_for("ltl", 4, 2)}
    assert sorted(loads) == sorted(map(str, chosen))


def test_a_saved_folder_names_itself_not_the_path_it_was_loaded_from(tmp_path) -> None:
    from hf_symbolinv.utils.files import save_model_folder

    folder = shipped_model("prop-small")
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    assert model.config.name_or_path == str(folder)  # what transformers would write
    save_model_folder(model, AutoTokenizer.from_pretrained(folder), tmp_path / "mine")
    assert json.loads((tmp_path / "mine" / "config.json").read_text(encoding="utf-8"))["_name_or_path"] == "mine"


def test_evaluating_a_shipped_model_leaves_its_folder_as_it_shipped(
    prop_data, tmp_path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    folder = shipped_model("prop-small")
    before = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    monkeypatch.chdir(tmp_path)
    argv = ["evaluate", str(folder), "--data", str(prop_data), "--limit", "6", "--beam", "1", "--alpha-symbols"]
    assert main(argv) == 0
    assert {path.name: path.stat().st_mtime_ns for path in folder.iterdir()} == before
    report = json.loads((tmp_path / "prop-small-eval-test.json").read_text(encoding="utf-8"))
    assert report["count"] == 6
    assert (tmp_path / "prop-small-heatmap-test.png").stat().st_size > 1000
    assert f"report: {tmp_path / 'prop-small-eval-test.json'}" in capsys.readouterr().out


def test_a_loaded_models_architecture_is_not_changed_by_set(prop_data, tmp_path, capsys) -> None:
    argv = ["train", "--task", "prop", "--init-from", str(shipped_model("prop-small")), "--data", str(prop_data)]
    argv += ["--output", str(tmp_path / "o"), "--steps", "1", "--set", "num_layers=1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        "--set num_layers: a model loaded with --init-from keeps its architecture; it may change only dropout, "
        "attention_dropout, activation_dropout" in err
    )
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_a_loaded_model_is_trained_on_without_dropout_where_set_says_so(prop_data, tmp_path) -> None:
    assert json.loads((shipped_model("prop-small") / "config.json").read_text())["dropout"] == 0.1
    argv = ["train", "--task", "prop", "--init-from", str(shipped_model("prop-small")), "--data", str(prop_data)]
    argv += ["--output", str(tmp_path / "o"), "--steps", "1", "--eval-samples", "4", "--set", "dropout=0.0"]
    assert main(argv) == 0
    assert json.loads((tmp_path / "o" / "model" / "config.json").read_text())["dropout"] == 0.0
    assert "with dropout=0.0" in (tmp_path / "o" / "model" / "README.md").read_text()


def test_a_shipped_model_is_fine_tuned_in_float32(prop_data, tmp_path) -> None:
    # The shipped weights store float16; a run that starts from them trains (and saves) float32 weights.
    output = tmp_path / "tuned"
    argv = ["train", "--task", "prop", "--init-from", str(shipped_model("prop-small")), "--data", str(prop_data)]
    argv += ["--output", str(output), "--steps", "2", "--batch-size", "8", "--eval-samples", "4"]
    assert main(argv) == 0
    with safe_open(str(output / "model" / "model.safetensors"), "pt") as handle:
        assert {handle.get_slice(tensor).get_dtype() for tensor in handle.keys()} == {"F32"}
