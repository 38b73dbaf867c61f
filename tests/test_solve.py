"""``symbolinv solve`` reads what the web page reads: infix and Polish, propositional and LTL, any names, checked
before torch is imported; one output format whatever the names; the exact solver's answer marked as the solver's
when the model's first answer is incorrect; several inputs answered with bad ones named."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hf_symbolinv import logic
from hf_symbolinv.commands import main
from hf_symbolinv.evaluation.solve import Solver
from hf_symbolinv.pretrained import shipped_model

ROOT = Path(__file__).resolve().parent.parent


def _blocks(out: str) -> dict[str, str]:
    """The output of a several-input ``solve``, by input."""
    blocks: dict[str, str] = {}
    current = None
    for line in out.splitlines():
        if line.startswith("input: "):
            current = line[len("input: ") :]
            blocks[current] = ""
        elif current is not None:
            blocks[current] += line + "\n"
    return blocks


def _exact_pipe(task: str):
    """A stand-in for a model that answers what the exact solver answers (in the names it is given)."""

    def pipe(text: str, **kwargs: object) -> list[dict[str, str]]:
        if task == "prop":
            answer = logic.format_assignment(logic.solve_prop(text).assignment)
        else:
            answer = logic.format_trace(logic.solve_ltl(text).trace, "polish", "file")
        return [{"generated_text": answer}]

    return pipe


def _wrong_pipe(answer: str):
    return lambda text, **kwargs: [{"generated_text": answer}]


def test_a_syntax_error_is_answered_without_importing_torch() -> None:
    code = (
        "import sys\n"
        "from hf_symbolinv.commands import main\n"
        "status = main(['solve', '& % a'])\n"
        "print(status, 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    # One line, naming the character and its position in the user's words, never an internal repr.
    assert done.stderr.count("\n") == 1 and "position 2" in done.stderr and "'%'" in done.stderr
    assert "SymbolRule" not in done.stderr and "Traceback" not in done.stderr


def test_solve_reads_infix_in_both_logics_and_any_names(capsys: pytest.CaptureFixture[str]) -> None:
    inputs = ["a & !a", "G F req -> F grant", "(a U b) & (c R d)", "Rain & (Snow | !Wind)", "& Rain | Snow ! Wind"]
    assert main(["solve", *inputs]) == 0
    blocks = _blocks(capsys.readouterr().out)
    assert list(blocks) == inputs
    assert "propositional formula in infix notation; in Polish: & a ! a" in blocks["a & !a"]
    assert "the formula is unsatisfiable" in blocks["a & !a"]
    assert "LTL formula in infix notation; in Polish: -> G F req F grant" in blocks["G F req -> F grant"]
    # The user's operators are kept in what is printed back (R stays R).
    assert "in Polish: & U a b R c d" in blocks["(a U b) & (c R d)"]
    assert "in infix: Rain & (Snow | !Wind)" in blocks["& Rain | Snow ! Wind"]
    for text, block in blocks.items():
        task = "ltl" if ("F" in text or "U" in text) else "prop"
        assert re.search(rf"^answered by: {task}-(small|35|best) \(a model that ships with the package\)$", block, re.M)
        assert re.search(r"^1\. .*    \[(correct|incorrect)\]$", block, re.MULTILINE), block
    assert re.search(r"^1\. trace .*; cycle\{.*\}    \[correct\]$", blocks["G F req -> F grant"], re.MULTILINE)
    assert "Rain = true" in blocks["Rain & (Snow | !Wind)"]


@pytest.mark.parametrize(
    ("task", "letters", "names"),
    [("prop", "& a | b ! c", "& Rain | Snow ! Wind"), ("ltl", "U a & b X c", "U Rain & Snow X Wind")],
)
def test_answers_print_in_one_format_whatever_the_names(monkeypatch, capsys, task, letters, names) -> None:
    monkeypatch.setattr(Solver, "pipeline", lambda self, folder: (_exact_pipe(task), task))
    shapes = []
    for text in (letters, names):
        assert main(["solve", "--task", task, text]) == 0
        lines = capsys.readouterr().out.splitlines()
        first = next(k for k, line in enumerate(lines) if line.startswith("1. "))
        answer, below = lines[first], lines[first + 1]
        for old, new in zip(("a", "b", "c"), ("Rain", "Snow", "Wind")):
            answer, below = (re.sub(rf"\b{new}\b", old, part) for part in (answer, below))
        shapes.append((answer, below))
    # Renamed back, the two print alike: the same words, the same spacing.
    assert shapes[0] == shapes[1]
    answer, below = shapes[0]
    if task == "prop":
        assert re.fullmatch(r"1\. \w = (true|false)(, \w = (true|false))*    \[correct\]", answer), answer
        assert re.fullmatch(r" +as the model writes it: (\w [01] ?)+", below), below  # tokens spaced, always
    else:
        assert answer.startswith("1. trace ") and "cycle{" in answer and answer.endswith("[correct]")
        assert below.strip().startswith("in Polish: ") and " ; " in below + " ; " and "{ " in below


def test_an_incorrect_first_answer_comes_with_the_solvers_answer_marked_as_such(monkeypatch, capsys) -> None:
    monkeypatch.setattr(Solver, "pipeline", lambda self, folder: (_wrong_pipe("a 0 b 0"), "prop"))
    assert main(["solve", "| a b"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^1\. a = false, b = false    \[incorrect\]$", out, re.MULTILINE), out
    assert "the model's first answer is incorrect; the exact solver's answer (not the model's):" in out
    solver_line = next(line for line in out.splitlines() if line.startswith("solver: "))
    assert solver_line.endswith("[correct, from the exact solver]")
    assert main(["solve", "--no-fallback", "| a b"]) == 0
    out = capsys.readouterr().out
    assert "[incorrect]" in out and "solver" not in out
    # LTL: a trace that breaks the formula, then the solver's trace in both notations.
    monkeypatch.setattr(Solver, "pipeline", lambda self, folder: (_wrong_pipe("!a ; { !a }"), "ltl"))
    assert main(["solve", "F a"]) == 0
    lines = capsys.readouterr().out.splitlines()
    k = next(k for k, line in enumerate(lines) if line.startswith("solver: "))
    assert lines[k].startswith("solver: trace ") and lines[k].endswith("[correct, from the exact solver]")
    assert lines[k + 1].strip().startswith("in Polish: ")
    # No fallback where no answer can be correct.
    monkeypatch.setattr(Solver, "pipeline", lambda self, folder: (_wrong_pipe("a 1"), "prop"))
    assert main(["solve", "& a ! a"]) == 0
    out = capsys.readouterr().out
    assert "unsatisfiable" in out and "solver:" not in out


def test_several_inputs_are_answered_and_a_bad_one_is_named(monkeypatch, capsys) -> None:
    monkeypatch.setattr(Solver, "pipeline", lambda self, folder: (_exact_pipe("prop"), "prop"))
    assert main(["solve", "& a b", "& % a", "| c d"]) == 2  # some failed
    out, err = capsys.readouterr()
    blocks = _blocks(out)
    assert blocks["& a b"].count("[correct]") == 1 and blocks["| c d"].count("[correct]") == 1
    assert blocks["& % a"] == "" and err.count("error: ") == 1 and "position 2" in err and "'%'" in err


def test_an_operator_letter_where_a_name_belongs_is_named(capsys) -> None:
    assert main(["solve", "& X Y"]) == 2
    assert "'X' at position 2 is the LTL operator next, not a name" in capsys.readouterr().err


def test_a_first_argument_that_is_a_folder_and_a_formula_is_ambiguous(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p").mkdir()
    assert main(["solve", "p", "q"]) == 2
    err = capsys.readouterr().err
    assert "'p' is both a folder here and a formula" in err and "--model p" in err
    monkeypatch.setattr(Solver, "pipeline", lambda self, folder: (_exact_pipe("prop"), "prop"))
    assert main(["solve", "--model", str(shipped_model("prop-small")), "p", "q"]) == 0
    out = capsys.readouterr().out
    assert list(_blocks(out)) == ["p", "q"] and out.count("[correct]") == 2


def test_every_solve_option_has_help_text(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    text = capsys.readouterr().out
    for option in ("--model", "--task", "--beam", "--top-n", "--symbols", "--no-fallback"):
        assert re.search(rf"{option}( \w+| \{{[^}}]*\}})?\s+\S", text), option


def test_the_old_module_of_the_model_commands_still_imports() -> None:
    import hf_symbolinv.commands.model as old
    from hf_symbolinv.commands import solve, train

    assert old.run_solve is solve.run_solve and old.run_train is train.run_train
