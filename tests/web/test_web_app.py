"""The web demo's logic without a browser: reading formulas in either notation, renaming, comparing answers, the
messages for bad input, the page's fragments, time limits, and `symbolinv web` without Gradio.

The Gradio app itself is tested where Gradio is installed (served on a free local port, called over HTTP); the
page in a real browser is ``test_web_browser.py``.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import tiny_overrides

from hf_symbolinv import logic
from hf_symbolinv.web.core import (
    AUTOMATIC,
    EXAMPLES,
    LETTERS,
    MAX_FORMULA_NODES,
    MAX_INPUT_CHARS,
    RENAMING_WORDS,
    InputError,
    card_excerpt,
    describe_folder,
    heatmap_image,
    model_entries,
    random_renaming,
    read_formula,
    readable_assignment,
    rename_answer,
    rename_formula_text,
    rename_text,
    same_answer,
)


def _save_model(folder: Path, vocabulary: str, **overrides: object) -> Path:
    import torch

    from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer

    torch.manual_seed(0)
    config = SymbolInvConfig.from_preset(vocabulary, **{**tiny_overrides(), **overrides})
    SymbolInvForConditionalGeneration(config).save_pretrained(folder)
    SymbolInvTokenizer.from_preset(vocabulary).save_pretrained(folder)
    return folder


# Gradio's queue uses pandas options that pandas 3 deprecates: not this package's to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword is deprecated)")


@pytest.fixture(scope="module")
def fixed_model(tmp_path_factory) -> Path:
    """An (untrained) fixed-embedding propositional model with rows for five symbols, a to e."""
    folder = tmp_path_factory.mktemp("web") / "fixed-baseline"
    return _save_model(folder, "prop", embedding_type="fixed", num_symbol_embeddings=5)


@pytest.fixture(scope="module")
def backend(fixed_model):
    from hf_symbolinv.web.backend import DemoBackend

    demo_backend = DemoBackend([fixed_model])
    yield demo_backend
    demo_backend.close()


# ---------------------------------------------------------------------------------------------------
# Reading formulas
# ---------------------------------------------------------------------------------------------------
def test_polish_and_infix_read_as_the_same_formula_in_the_users_names() -> None:
    polish, infix = read_formula("& Rain | Snow ! Wind"), read_formula("  Rain & (Snow | !Wind) ")
    assert (polish.notation, infix.notation) == ("polish", "infix")
    assert polish.formula == infix.formula and polish.task == infix.task == "prop"
    assert polish.names == infix.names == ("Rain", "Snow", "Wind")
    assert polish.polish == infix.polish == "& Rain | Snow ! Wind"  # what the model is given, in the user's names
    assert infix.infix == "Rain & (Snow | !Wind)"


def test_a_temporal_formula_is_read_as_ltl_and_a_task_restricts_the_reading() -> None:
    read = read_formula("request U (granted & X done)")
    assert (read.task, read.notation, read.names) == ("ltl", "infix", ("request", "granted", "done"))
    assert read_formula("& a b", task="ltl").task == "ltl"  # a propositional formula is an LTL formula too
    with pytest.raises(InputError, match="position 4: .*temporal operator 'X'") as caught:
        read_formula("& a X b", task="prop")
    assert caught.value.position == 4


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("& a |", 5),  # Polish: an operand missing at the end
        ("a & (b |", 8),  # infix: the same, after an open parenthesis
        ("& Rain | Snow", 13),
        ("a b", 2),
        ("& a ) b", 4),
    ],
)
def test_a_syntax_error_names_the_position_of_the_reading_that_got_furthest(text: str, position: int) -> None:
    with pytest.raises(InputError) as caught:
        read_formula(text)
    error = caught.value
    assert error.position == position and error.source == text
    assert f"position {position}" in error.message and "expected" in error.message
    assert "\n" not in error.message  # one line


def test_glued_names_get_a_hint_about_spaces() -> None:
    with pytest.raises(InputError, match="need spaces between tokens"):
        read_formula("Rain&Snow")


def test_empty_too_long_and_too_large_inputs_are_refused_with_a_reason() -> None:
    with pytest.raises(InputError, match="type a formula"):
        read_formula("   ")
    with pytest.raises(InputError, match=f"at most {MAX_INPUT_CHARS:,}"):
        read_formula("!" * MAX_INPUT_CHARS + "a")
    chain = " ".join(["&"] * MAX_FORMULA_NODES + [f"p{i}" for i in range(MAX_FORMULA_NODES + 1)])
    with pytest.raises(InputError, match=f"at most {MAX_FORMULA_NODES}"):
        read_formula(chain)


def test_every_example_on_the_page_reads() -> None:
    for example in EXAMPLES:
        read = read_formula(example)
        assert read.names and all(len(name) > 1 for name in read.names)  # multi-letter names throughout


# ---------------------------------------------------------------------------------------------------
# Renaming
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("style", ["words", "letters"])
def test_a_random_renaming_is_one_to_one_and_moves_every_name(style: str) -> None:
    names = ("Rain", "Snow", "Wind", "a", "b")
    for seed in range(20):
        mapping = random_renaming(names, random.Random(seed), style)
        assert list(mapping) == list(names)
        assert len(set(mapping.values())) == len(names)  # one to one
        assert not set(mapping.values()) & set(names)  # every symbol visibly changes
        pool = RENAMING_WORDS if style == "words" else LETTERS
        assert set(mapping.values()) <= set(pool)


def test_letters_come_from_the_rows_a_fixed_model_has_and_words_never_run_out() -> None:
    mapping = random_renaming(("Rain", "Snow", "Wind"), random.Random(0), "letters", letters="abcde")
    assert set(mapping.values()) <= set("abcde")
    one = random_renaming(("a",), random.Random(0), "letters", letters="a")
    assert one == {"a": "a"}  # the only renaming there is
    many = [f"s{i}" for i in range(3 * len(RENAMING_WORDS))]
    assert len(set(random_renaming(many, random.Random(0), "words").values())) == len(many)
    with pytest.raises(InputError, match="rename to words"):
        random_renaming(many, random.Random(0), "letters")


def test_renaming_keeps_the_users_spelling_and_spacing() -> None:
    mapping = {"Rain": "Cloud", "Snow": "Dew", "Wind": "Tide"}
    assert rename_text("Rain & (Snow | !Wind)", mapping, "infix") == "Cloud & (Dew | !Tide)"
    assert rename_text("&  Rain |Snow ! Wind", mapping) == "&  Cloud |Dew ! Tide"
    assert rename_text("&a|b!c", {"a": "Cloud", "b": "Dew", "c": "Tide"}) == "& Cloud | Dew ! Tide"
    assert rename_text("&a|b!c", {"a": "q", "b": "r", "c": "s"}) == "&q|r!s"
    assert rename_text("a&(b|!c)", {"a": "Cloud", "b": "Dew", "c": "Tide"}, "infix") == "Cloud & (Dew | !Tide)"
    assert rename_text("a", {"a": "Cloud"}) == "Cloud" and read_formula("Cloud").names == ("Cloud",)
    assert rename_text("Xa U Gb", {"a": "Cloud", "b": "Dew"}, "infix") == "X Cloud U G Dew"


@pytest.mark.parametrize("kind", ["prop", "ltl"])
@pytest.mark.parametrize("notation", ["polish", "infix"])
def test_a_renamed_formula_reads_back_as_the_renamed_formula(kind: str, notation: str) -> None:
    rng = random.Random(7)
    make = logic.random_prop_formula if kind == "prop" else logic.random_ltl_formula
    for _ in range(60):
        formula = make(rng, (1, 20), 4)
        text = logic.format_formula(formula, notation, "file")
        read = read_formula(text, kind)
        for style in ("words", "letters"):
            mapping = random_renaming(read.names, rng, style)
            renamed = rename_formula_text(read, mapping)
            again = read_formula(renamed, kind)
            assert again.formula == logic.rename_formula(read.formula, mapping), (text, renamed)


def test_answers_compare_by_tokens_in_the_order_written() -> None:
    assert rename_answer("Rain 1 Wind 0", {"Rain": "Cloud", "Wind": "Tide"}) == "Cloud 1 Tide 0"
    assert rename_answer("Rain 1 Wind 0", {"Rain": "h", "Wind": "r"}) == "h1r0"  # as the model spells letters
    assert rename_answer("a;{&a!b}", {"a": "req", "b": "ack"}) == "req ; { & req ! ack }"
    assert same_answer("h1r0", "h 1 r 0") and same_answer("{&a!b}", "{ & a ! b }")
    assert not same_answer("a1b0", "b0a1") and not same_answer("a1", "a0")
    assert readable_assignment("Rain 1 Wind 0") == "Rain = true, Wind = false"
    assert readable_assignment("b;{1}") is None


# ---------------------------------------------------------------------------------------------------
# Model folders
# ---------------------------------------------------------------------------------------------------
def test_the_page_lists_the_shipped_models_and_marks_fixed_embedding_folders(fixed_model: Path) -> None:
    entries = model_entries([fixed_model])
    assert entries[0].label == AUTOMATIC and entries[0].folder is None
    assert {entry.label for entry in entries if entry.shipped} >= {
        "prop-small",
        "prop-35",
        "ltl-small",
        "ltl-35",
    }
    added = entries[-1]
    assert (added.label, added.folder, added.task, added.fixed) == ("fixed-baseline", fixed_model, "prop", True)
    assert not any(entry.fixed for entry in entries[:-1])


def test_a_folder_of_another_task_or_no_folder_is_refused(tmp_path: Path) -> None:
    copy_model = _save_model(tmp_path / "copy-model", "copy", encoder_position_encoding="rope")
    with pytest.raises(ValueError, match="propositional and LTL"):
        describe_folder(copy_model)
    with pytest.raises(ValueError, match="no-such-folder"):
        describe_folder(tmp_path / "no-such-folder")


def test_the_card_excerpt_is_the_title_and_the_evaluation_table(tmp_path: Path) -> None:
    from hf_symbolinv.pretrained import shipped_model

    excerpt = card_excerpt(shipped_model("prop-small"))
    assert excerpt.startswith("**Symbol-Invariant Transformer: prop-small")
    assert re.search(r"\| correct \| \*\*\d+\.\d%\*\* \| \*\*\d+\.\d%\*\* \|", excerpt)  # the card's figures table
    assert "```" not in excerpt and "library_name" not in excerpt  # no code, no Hub metadata
    assert "no model card" in card_excerpt(tmp_path)
    (tmp_path / "README.md").write_text("# A model\n\nTrained briefly.\n\n## Evaluation\n\nNot yet.\n", "utf-8")
    assert card_excerpt(tmp_path) == "**A model**\n\nNot yet."


def test_the_heatmap_is_the_evaluations_png_where_the_folder_has_one(tmp_path: Path) -> None:
    assert heatmap_image(tmp_path) is None
    (tmp_path / "heatmap-validation.png").write_bytes(b"png")
    assert heatmap_image(tmp_path) == tmp_path / "heatmap-validation.png"
    (tmp_path / "heatmap-test.png").write_bytes(b"png")
    assert heatmap_image(tmp_path) == tmp_path / "heatmap-test.png"


# ---------------------------------------------------------------------------------------------------
# Answers and renamings with the shipped models
# ---------------------------------------------------------------------------------------------------
def test_answers_come_in_the_users_names_with_the_checkers_verdicts(backend) -> None:
    view = backend.answer("& Rain | Snow ! Wind", top_n=3)
    from hf_symbolinv.pretrained import model_for

    # The shipped model the choice tables give a 6-node formula over 3 symbols.
    assert view.folder == model_for("prop", 6, 3) and view.solution.satisfiable is True
    assert len(view.answers) == 3
    for answer in view.answers:
        assert answer.verdict in ("correct", "incorrect", "unknown", "invalid")
        # Every word of every beam is a value or one of the user's names, even in a malformed (invalid) one.
        assert set(answer.text.split()) - {"0", "1"} <= {"Rain", "Snow", "Wind"}
        if answer.verdict != "invalid":
            assert set(logic.parse_assignment(answer.text)) <= {"Rain", "Snow", "Wind"}
    # A fixed, deterministic fact of the shipped model at beam 3 (as in test_pretrained.py).
    assert view.answers[0].verdict == "correct"
    infix = backend.answer("Rain & (Snow | !Wind)", top_n=3)
    assert [answer.text for answer in infix.answers] == [answer.text for answer in view.answers]


def test_an_ltl_answer_has_a_readable_trace_and_a_chosen_model_answers(backend) -> None:
    view = backend.answer("request U (granted & X done)", label="ltl-small", top_n=1)
    assert view.folder.name == "ltl-small" and view.read.task == "ltl"
    answer = view.answers[0]
    if answer.verdict != "invalid":
        assert answer.trace == logic.format_trace(logic.parse_trace(answer.text), "infix")


def test_an_unsatisfiable_formula_is_said_to_be_unsatisfiable(backend) -> None:
    from hf_symbolinv.web.render import answers_html

    view = backend.answer("& Sunny ! Sunny", top_n=2)
    assert view.solution.satisfiable is False
    assert all(answer.verdict != "correct" for answer in view.answers)
    html = answers_html(view)
    assert "Unsatisfiable" in html and "none can be correct" in html
    assert "Satisfiable <" not in html


@pytest.mark.parametrize("style", ["words", "letters"])
def test_the_sits_answer_is_renamed_with_the_formula(backend, style: str) -> None:
    for seed, text in enumerate(EXAMPLES):  # a different renaming for each example
        view = backend.rename(text, style=style, rng=random.Random(seed))
        sit = view.results[0]
        assert not sit.model.fixed and sit.error is None
        assert sit.expected == rename_answer(sit.original.text, view.mapping)
        assert sit.follows, (text, view.mapping, sit.expected, sit.renamed.text)
        assert same_answer(sit.expected, sit.renamed.text)


def test_a_fixed_embedding_model_is_shown_beside_and_gets_letters_it_has_rows_for(backend) -> None:
    from hf_symbolinv.web.render import rename_html

    view = backend.rename("& Rain | Snow ! Wind", style="letters", rng=random.Random(1))
    assert [result.model.fixed for result in view.results] == [False, True]
    assert set(view.mapping.values()) <= set("abcde")  # the baseline has rows for five symbols
    fixed = view.results[1]
    assert fixed.error is None and fixed.original is not None and fixed.renamed is not None
    assert fixed.follows == same_answer(rename_answer(fixed.original.text, view.mapping), fixed.renamed.text)
    html = rename_html(view)
    assert "fixed embeddings" in html and "symbol-invariant" in html
    words = rename_html(backend.rename("& Rain | Snow ! Wind", style="words", rng=random.Random(1)))
    assert "rename to letters to see it" in words
    ltl = backend.rename("U waiting granted", rng=random.Random(1))
    assert len(ltl.results) == 1  # the propositional baseline cannot read LTL: not shown


def test_a_model_limit_is_a_message_not_a_failure(backend) -> None:
    # Six distinct letters reach slots the five-row baseline lacks.
    with pytest.raises(InputError, match="cannot answer this input: .*rows for 5 symbols"):
        backend.answer("& & & & & a b c d e f", label="fixed-baseline")
    with pytest.raises(InputError, match="no model 'nope'"):
        backend.answer("a", label="nope")


# ---------------------------------------------------------------------------------------------------
# Messages, time limits, threads
# ---------------------------------------------------------------------------------------------------
def test_the_error_message_points_at_the_position_and_escapes_the_input() -> None:
    from hf_symbolinv.web.render import error_html

    with pytest.raises(InputError) as caught:
        read_formula("& Rain <b>")
    html = error_html(caught.value)
    assert "<b>" not in html and "&lt;b&gt;" in html  # user text is escaped
    assert 'class="si-error"' in html and "position 7" in html
    caret = html.split('<pre class="si-caret">', 1)[1].split("</pre>", 1)[0]
    assert caret.splitlines()[1] == " " * 7 + "^"


def test_a_request_past_the_time_limit_says_so(fixed_model: Path, monkeypatch) -> None:
    from hf_symbolinv.web.backend import DemoBackend, RequestTimeout

    slow = DemoBackend(time_limit=0.3)
    monkeypatch.setattr(slow.solver, "solve", lambda *args, **kwargs: time.sleep(2))
    try:
        started = time.perf_counter()
        with pytest.raises(RequestTimeout, match="longer than 0.3 s"):
            slow.answer("& a b")
        assert time.perf_counter() - started < 1.5
    finally:
        slow.close()


@pytest.mark.slow  # seconds of waiting on purpose, or a subprocess
def test_a_slow_request_does_not_hold_up_a_fast_one(backend, monkeypatch) -> None:
    real = backend.solver.solve

    def solve(text: str, **kwargs: object):
        if "slow" in text:
            time.sleep(3)
        return real(text, **kwargs)

    monkeypatch.setattr(backend.solver, "solve", solve)
    slow = threading.Thread(target=backend.answer, args=("& slow fast",))
    slow.start()
    time.sleep(0.2)
    started = time.perf_counter()
    backend.answer("& a b")
    assert time.perf_counter() - started < 2.5 and slow.is_alive()
    slow.join()


def test_requests_run_on_one_thread_unless_told(monkeypatch) -> None:
    import torch

    from hf_symbolinv.utils.threads import set_torch_threads as set_threads

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        torch.set_num_threads(2)
        set_threads(None)
        assert torch.get_num_threads() == 1
        set_threads(2)
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        set_threads(None)  # the user's choice stays
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


# ---------------------------------------------------------------------------------------------------
# Without Gradio
# ---------------------------------------------------------------------------------------------------
@pytest.mark.slow  # seconds of waiting on purpose, or a subprocess
def test_the_demos_logic_imports_without_gradio() -> None:
    script = (
        "import sys; sys.modules['gradio'] = None\n"
        "import hf_symbolinv.web, hf_symbolinv.web.core, hf_symbolinv.web.backend, hf_symbolinv.web.render\n"
        "import hf_symbolinv.commands.web\n"
        "assert not hf_symbolinv.web.gradio_available()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_symbolinv_web_without_gradio_says_how_to_install_it(monkeypatch, capsys) -> None:
    import argparse

    from hf_symbolinv.commands.web import add_web_arguments, run_web

    monkeypatch.setitem(sys.modules, "gradio", None)  # as where Gradio is not installed
    parser = argparse.ArgumentParser()
    add_web_arguments(parser)
    status = run_web(parser.parse_args(["--port", "7999"]))
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "pip install" in lines[0] and "[web]" in lines[0]
    assert "Traceback" not in captured.err


def test_the_port_must_be_a_port() -> None:
    import argparse

    from hf_symbolinv.commands.web import add_web_arguments

    parser = argparse.ArgumentParser()
    add_web_arguments(parser)
    assert parser.parse_args(["--port", "8080", "--host", "0.0.0.0", "a", "b"]).models == ["a", "b"]
    for bad in ("0", "70000", "http"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--port", bad])


# ---------------------------------------------------------------------------------------------------
# The Gradio app, served on a free port and called over HTTP (no browser)
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(backend):
    pytest.importorskip("gradio", reason="the web extra is not installed: pip install -e '.[web]'")
    client_module = pytest.importorskip("gradio_client")
    from hf_symbolinv.web.app import build_app, launch

    demo = build_app(backend=backend)
    launch(demo, host="127.0.0.1", port=_free_port(), block=False, warm_up=False)
    try:
        yield client_module.Client(demo.local_url, verbose=False), backend
    finally:
        demo.close()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_app_answers_and_renames_over_http(served) -> None:
    client, _ = served
    answers, card, _ = client.predict("& Rain | Snow ! Wind", AUTOMATIC, 2, api_name="/answer")
    assert 'class="si-verdict si-correct"' in answers and "Rain" in answers and "Satisfiable" in answers
    from hf_symbolinv.pretrained import model_for

    assert model_for("prop", 6, 3).name in card
    renamed = client.predict("Rain & (Snow | !Wind)", AUTOMATIC, "words", api_name="/rename")
    assert "Renaming the first answer gives the second" in renamed and "si-follows" in renamed


def test_the_app_shows_messages_never_stack_traces(served, monkeypatch) -> None:
    client, backend = served
    answers, _, _ = client.predict("& Rain |", AUTOMATIC, 1, api_name="/answer")
    assert "position 8" in answers and "si-caret" in answers
    renamed = client.predict("", AUTOMATIC, "words", api_name="/rename")
    assert "type a formula" in renamed

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug\nwith a second line")

    monkeypatch.setattr(backend, "answer", broken)
    answers, _, _ = client.predict("& a b", AUTOMATIC, 1, api_name="/answer")
    assert "something went wrong on the server: a bug" in answers
    assert "second line" not in answers and "Traceback" not in answers


@pytest.mark.slow  # seconds of waiting on purpose, or a subprocess
def test_the_queue_answers_a_fast_request_beside_a_slow_one(served, monkeypatch) -> None:
    from hf_symbolinv.web.app import CONCURRENCY_LIMIT

    client, backend = served
    assert CONCURRENCY_LIMIT > 1
    real = backend.solver.solve

    def solve(text: str, **kwargs: object):
        if "slow" in text:
            time.sleep(4)
        return real(text, **kwargs)

    monkeypatch.setattr(backend.solver, "solve", solve)
    slow = client.submit("& slow fast", AUTOMATIC, 1, api_name="/answer")
    time.sleep(0.3)
    started = time.perf_counter()
    answers, _, _ = client.predict("& a b", AUTOMATIC, 1, api_name="/answer")
    assert time.perf_counter() - started < 3 and not slow.done()
    assert "si-verdict" in answers
    assert "si-verdict" in slow.result(timeout=30)[0]


def test_the_model_panel_shows_the_card_and_the_heatmap_where_the_folder_has_one(fixed_model: Path, tmp_path) -> None:
    pytest.importorskip("gradio", reason="the web extra is not installed: pip install -e '.[web]'")
    from PIL import Image

    from hf_symbolinv.web.app import _card_for, _heatmap_update
    from hf_symbolinv.web.core import ModelEntry

    automatic = _card_for(ModelEntry(AUTOMATIC, None, None, shipped=True))
    assert "prop-small" in automatic and "ltl-35" in automatic and "| correct |" in automatic
    assert _heatmap_update(fixed_model)["visible"] is False
    folder = tmp_path / "evaluated"
    folder.mkdir()
    Image.new("RGB", (40, 20), "white").save(folder / "heatmap-test.png")
    shown = _heatmap_update(folder)
    assert shown["visible"] is True and shown["value"].size == (40, 20)


def test_the_space_is_the_same_app_imported() -> None:
    pytest.importorskip("gradio", reason="the web extra is not installed: pip install -e '.[web]'")
    import importlib.util

    import gradio as gr

    space = Path(__file__).resolve().parents[2] / "examples" / "space"
    spec = importlib.util.spec_from_file_location("space_app", space / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # builds the page; models load only when it is launched
    assert isinstance(module.demo, gr.Blocks) and module.demo.symbolinv_backend.labels[0] == AUTOMATIC
    requirements = (space / "requirements.txt").read_text(encoding="utf-8")
    assert "[web]" in requirements and "torch" in requirements
    assert "sdk: gradio" in (space / "README.md").read_text(encoding="utf-8")
    assert (space / "screenshot.png").is_file()


def test_the_web_command_registers_like_the_others() -> None:
    import argparse

    from hf_symbolinv.commands.web import add_web_parser, run_web

    parser = argparse.ArgumentParser(prog="symbolinv")
    add_web_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["web", "--port", "8000", "runs/sit"])
    assert (args.command, args.port, args.host, args.models, args.handler) == ("web", 8000, None, ["runs/sit"], run_web)


# ---------------------------------------------------------------------------------------------------
# One reader with `solve`, the page's format, work that is bounded, uploads, start-up failures
# ---------------------------------------------------------------------------------------------------
def test_the_page_and_solve_share_one_reader() -> None:
    from hf_symbolinv.logic import reading
    from hf_symbolinv.web import core

    assert core.read_formula is reading.read_formula and core.InputError is reading.InputError


def test_the_page_shows_polish_with_spaces_and_the_users_operators(backend) -> None:
    from hf_symbolinv.web.render import answers_html

    html = answers_html(backend.answer("Rain & (Snow | !Wind)", top_n=1))
    assert "in Polish: <code>&amp; Rain | Snow ! Wind</code>" in html
    html = answers_html(backend.answer("G (req -> F grant)", top_n=1))
    assert "in Polish: <code>G -&gt; req F grant</code>" in html  # G, -> and F as typed
    assert "given to the model as <code>" in html  # and what the model gets, in its operators
    assert "in Polish: " in html and "cycle{" in html  # the trace in both notations


def test_an_incorrect_first_answer_shows_the_solvers_answer_on_the_page(backend, monkeypatch) -> None:
    from hf_symbolinv.web.render import answers_html

    wrong = lambda text, **kwargs: [{"generated_text": "a 0 b 0"}]  # noqa: E731
    monkeypatch.setattr(backend.solver, "pipeline", lambda folder: (wrong, "prop"))
    html = answers_html(backend.answer("| a b", top_n=1))
    assert 'class="si-solver"' in html and "this answer is the exact solver's, not the model's" in html


def test_a_formula_whose_rewrite_blows_up_is_refused_at_once_on_the_page(backend) -> None:
    chain = "X " + "".join(f"<-> p{i} " for i in range(9)) + "p9"  # 20 nodes; 4,000+ in the LTL model's operators
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"20 nodes and [\d,]+ with <-> and xor rewritten"):
        backend.answer(chain)
    assert time.perf_counter() - started < 1.0


def test_checking_work_past_its_limit_is_stopped_and_the_next_request_is_served() -> None:
    from hf_symbolinv.evaluation.solve import check_answers
    from hf_symbolinv.web.backend import RequestTimeout, StoppableWork

    work = StoppableWork(time_limit=2.0)
    try:
        started = time.perf_counter()
        with pytest.raises(RequestTimeout, match="longer than 2 s"):
            work(time.sleep, (30,))
        assert time.perf_counter() - started < 15.0  # stopped, not waited for (the process's start is not counted)
        checked = work(check_answers, ("ltl", "U a b", ["b;{1}", "a;{a}"], True, 4.0))
        assert checked.states == ["correct", "incorrect"] and checked.status == "sat"
    finally:
        work.close()


def test_checking_work_runs_in_another_process_bounded_in_memory() -> None:
    import os

    from hf_symbolinv.web.backend import StoppableWork

    work = StoppableWork(time_limit=30, memory_limit=512 * 2**20)
    try:
        assert work(os.getpid, ()) != os.getpid()
        with pytest.raises(InputError, match="needed more than 512 MB"):
            work(bytearray, (2**30,))
        assert work(len, ("still serving",)) == 13
    finally:
        work.close()


def test_the_app_refuses_uploads(served) -> None:
    import urllib.error
    import urllib.request

    client, _ = served
    body = (
        b'--XX\r\nContent-Disposition: form-data; name="files"; filename="big.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + b"x" * 100_000 + b"\r\n--XX--\r\n"
    )
    for path in ("gradio_api/upload", "upload"):
        request = urllib.request.Request(
            client.src.rstrip("/") + "/" + path,
            data=body,
            headers={"Content-Type": "multipart/form-data; boundary=XX"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 403 and b"no uploads" in refused.value.read()


def test_a_port_in_use_or_a_bad_host_is_one_line_naming_it(backend) -> None:
    import socket

    pytest.importorskip("gradio", reason="the web extra is not installed: pip install -e '.[web]'")
    from hf_symbolinv.web.app import StartError, check_address

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(StartError, match=f"^port {port} is in use on 127.0.0.1: choose another with --port N$"):
            check_address("127.0.0.1", port)
    with pytest.raises(StartError, match="^cannot serve on host '999.1.1.1': not a valid address"):
        check_address("999.1.1.1", 7860)


def test_symbolinv_web_on_a_bad_host_is_one_line(capsys) -> None:
    pytest.importorskip("gradio", reason="the web extra is not installed: pip install -e '.[web]'")
    from hf_symbolinv.commands import main

    assert main(["web", "--host", "999.1.1.1", "--port", str(_free_port())]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "999.1.1.1" in err and "Traceback" not in err
