"""Answers to single inputs with the checker's verdicts: what ``symbolinv solve`` prints and the web demo shows.

A :class:`Solver` loads each model once (a given folder, or the shipped model that fits each input), asks it
for its top answers in the user's own symbol names, judges each with the task's checker, and says whether the
input has any correct answer at all (the exact solver's verdict), so that an unsatisfiable formula is reported
as such rather than "answered" with an incorrect assignment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..tasks import get_task, task_for_vocabulary

T = TypeVar("T")


@dataclass(frozen=True)
class Answer:
    """One answer: its text in the user's names, the checker's verdict (``correct``, ``incorrect``, ``unknown`` or
    ``invalid``), for LTL the trace in readable infix, the answer as it is shown whatever the names (``readable``:
    ``Rain = true, Wind = false`` or an infix trace; ``polish``: Polish with spaces; ``None`` for an invalid
    answer), and whether the exact solver gave it rather than the model."""

    text: str
    verdict: str
    trace: str | None = None
    readable: str | None = None
    polish: str | None = None
    by_solver: bool = False


@dataclass(frozen=True)
class Solution:
    """A model's answers to one input, with the task, the model folder, whether the input has any correct
    answer (``satisfiable``: ``True``, ``False``, or ``None`` when the exact solver could not tell within its
    budget or the task has none) and, when the model's first answer is not correct and the exact solver found
    one, the solver's answer (``fallback``)."""

    input: str
    task: str
    model: Path
    answers: list[Answer] = field(default_factory=list)
    satisfiable: bool | None = None
    fallback: Answer | None = None


#: Work units of the exact LTL solver per input (its deterministic budget, :func:`hf_symbolinv.logic.solve_ltl`),
#: beside its time limit: what one input may cost is bounded by work, not only by time, the same on every machine.
EXACT_LTL_WORK = 2_000_000
#: Seconds the exact LTL solver may take per input.
EXACT_LTL_SECONDS = 5.0


class Solver:
    """Answers inputs with ``model`` (a saved model folder), or with the shipped model that fits each input when
    ``model`` is ``None``; models are loaded on first use and kept."""

    def __init__(self, model: str | Path | None = None) -> None:
        from ..utils.files import resolve_model_folder

        self.folder = resolve_model_folder(str(model)) if model is not None else None
        self._loaded: dict[Path, tuple[Any, str]] = {}
        self._composers: dict[tuple[Path, int, int], Any] = {}

    def model_folder(self, text: str, task: str | None = None, symbols: str | None = None) -> Path:
        """The folder that answers ``text``: the solver's model, else the shipped one for its task and size."""
        if self.folder is not None:
            if task is not None:
                raise ValueError("a task chooses among the shipped models: it cannot be given with a MODEL")
            return self.folder
        return shipped_folder_for(text, _symbol_rule(symbols), task)

    def pipeline(self, folder: Path) -> tuple[Any, str]:
        """The (cached) generation pipeline of ``folder`` and its task's name."""
        if folder not in self._loaded:
            self._loaded[folder] = self.load_pipeline(folder)
        return self._loaded[folder]

    @staticmethod
    def load_pipeline(folder: Path) -> tuple[Any, str]:
        """A new generation pipeline of ``folder`` (not cached) and its task's name."""
        from transformers import pipeline

        from ..models.folders import load_model

        model, tokenizer, _ = load_model(str(folder))  # in float32, though the shipped weights store float16
        task = task_for_vocabulary(model.config.vocabulary).name
        return pipeline("symbolic-generation", model=model, tokenizer=tokenizer), task

    def solve(
        self,
        text: str,
        task: str | None = None,
        beam: int = 3,
        top_n: int = 1,
        symbols: str | None = None,
        folder: Path | None = None,
        fallback: bool = True,
        check_timeout: float | None = 10.0,
        max_new_tokens: int | None = None,
    ) -> Solution:
        """The model's ``top_n`` answers to ``text`` (beam search of width ``max(beam, top_n)``), judged (each check
        within ``check_timeout`` seconds), and with ``fallback`` the exact solver's answer when the model's first
        answer is not correct. ``max_new_tokens`` caps the answer's length (the pipeline's own budget otherwise).
        A ``ValueError`` names what is wrong with an input the model cannot read (with the position for a syntax
        error)."""
        folder = folder if folder is not None else self.model_folder(text, task, symbols)
        pipe, task_name = self.pipeline(folder)
        rule = _symbol_rule(symbols)
        model_input = in_model_operators(text, task_name, symbols)
        budget = {} if max_new_tokens is None else {"max_new_tokens": max_new_tokens}
        texts = self.composed(folder, pipe, model_input, beam, top_n) if task_name == "clutrr" else None
        if texts is None:
            generated = pipe(
                model_input, symbols=symbols, num_beams=max(beam, top_n), num_return_sequences=top_n, **budget
            )
            texts = [item["generated_text"] for item in generated]
        source = as_logic(text, task_name, rule)
        judged = [as_logic(answer_text, task_name, rule, answer=True) for answer_text in texts]
        # The checker's and the exact solver's work: pure Python, run where `check_runner` says (the web page runs it
        # in a process it can stop).
        checked = self.check_runner(check_answers, (task_name, source, judged, fallback, check_timeout))
        answers = [_shown(answer_text, state, task_name, rule) for answer_text, state in zip(texts, checked.states)]
        satisfiable = {"sat": True, "unsat": False}.get(checked.status)  # None: no exact solver, or out of budget
        rescue = None
        if checked.solver_text is not None and checked.solver_state is not None:
            rescue = _shown(checked.solver_text, checked.solver_state, task_name, None, by_solver=True)
        return Solution(text, task_name, folder, answers, satisfiable, rescue)

    def composed(self, folder: Path, pipe: Any, story: str, beam: int, top_n: int) -> list[str] | None:
        """A CLUTRR story's ``top_n`` answers by composing its chain a few facts at a time (as ``symbolinv evaluate``
        answers; :mod:`hf_symbolinv.evaluation.chains`), or None where the story holds no single chain."""
        from ..tasks.clutrr import CLUTRR_RELATIONS
        from .chains import ChainComposer, compose_story

        width = max(beam, top_n)
        key = (folder, id(pipe.model), width)  # one composer per model copy: it asks its model as it composes
        if key not in self._composers:
            self._composers[key] = ChainComposer(pipe.model, pipe.tokenizer, CLUTRR_RELATIONS, beam=width)
        return compose_story(self._composers[key], story, top_n)

    def check_runner(self, work: Callable[..., T], args: tuple) -> T:
        """Where the checking work of :meth:`solve` runs: here, in this thread (the web page's solver runs it in a
        process it can stop)."""
        return work(*args)


@dataclass(frozen=True)
class Checked:
    """The checker's verdict on each answer, the exact solver's status and, where asked for and needed, its answer
    with the checker's verdict on it."""

    states: list[str]
    status: str | None
    solver_text: str | None = None
    solver_state: str | None = None


def check_answers(
    task: str, source: str, answers: list[str], fallback: bool = True, check_timeout: float | None = 10.0
) -> Checked:
    """Judge each answer to ``source`` (in the logic engine's notation), ask the exact solver whether any answer is
    correct and, with ``fallback``, for its answer when the first answer is not correct. Pure Python (the logic engine
    and the tasks' checkers, no torch), so that it can run in another process."""
    from ..tasks import get_task

    judge = get_task(task).judge
    states = [judge(source, answer, None, check_timeout).state for answer in answers]
    status, solver_text = exact_solution(task, source)
    if not fallback or solver_text is None or (states and states[0] == "correct"):
        return Checked(states, status)
    return Checked(states, status, solver_text, judge(source, solver_text, None, check_timeout).state)


def _shown(text: str, verdict: str, task: str, rule: Any, by_solver: bool = False) -> Answer:
    """An answer with the forms it is shown in (see :class:`Answer`)."""
    from ..logic.reading import answer_forms

    forms = answer_forms(text, task, rule) if verdict != "invalid" else None
    readable, polish = forms if forms is not None else (None, None)
    trace = readable if task == "ltl" else None
    return Answer(text, verdict, trace, readable, polish, by_solver)


def exact_solution(task: str, source: str) -> tuple[str | None, str | None]:
    """The exact solver's status for ``source`` (``sat``, ``unsat``, ``timeout``; ``None`` for a task without one)
    and, where satisfiable, an answer in the task's answer notation and the formula's names."""
    from .. import logic

    if task == "prop":
        result = logic.solve_prop(source)
        if result.status != "sat":
            return result.status, None
        return result.status, logic.format_assignment(result.assignment)
    if task == "ltl":
        result = logic.solve_ltl(source, timeout=EXACT_LTL_SECONDS, max_work=EXACT_LTL_WORK, minimize=False)
        if result.status != "sat" or result.trace is None:
            return result.status, None
        return result.status, logic.format_trace(result.trace, "polish", "file")
    return None, None


def _symbol_rule(pattern: str | None) -> Any:
    from ..utils.symbols import SymbolRule

    return SymbolRule(pattern=pattern) if pattern else None


def in_model_operators(source: str, task: str, pattern: str | None) -> str:
    """A formula re-printed with the operators the model's vocabulary has (``G a`` -> ``!U1!a``, ``-> a b`` ->
    ``|!ab``), in the user's names as the pipeline reads them; a CLUTRR story in the symbolic form the models read
    (a text story's facts; a ``ValueError`` names a sentence or fact that is malformed); other tasks' inputs and text
    the logic engine cannot read are passed on unchanged (the pipeline then names what is wrong)."""
    from ..logic import LogicSyntaxError, format_ltl, format_prop, parse_ltl, parse_prop
    from ..models.symbolinv.pipeline_symbolinv import IDENTIFIER_PATTERN
    from ..utils.symbols import SymbolRule

    if task == "clutrr":
        from ..tasks.clutrr import facts_of_text, read_story

        if "[" in source:
            return facts_of_text(source)[0]  # a typed text story: its facts, in the symbolic form the models read
        read_story(source)  # a malformed fact is named here, not answered with a guess
        return source
    printers = {"prop": (parse_prop, format_prop), "ltl": (parse_ltl, format_ltl)}
    if task not in printers:
        return source
    # The rule the pipeline reads with: the user's, identifiers in whitespace-separated text, else letters.
    rule = SymbolRule(pattern=pattern or (IDENTIFIER_PATTERN if any(ch.isspace() for ch in source.strip()) else None))
    parse, print_ = printers[task]
    try:
        return print_(parse(source, symbols=rule))
    except (LogicSyntaxError, ValueError):
        return source


def shipped_folder_for(text: str, symbols: Any, task: str | None) -> Path:
    """The shipped trained model for ``text`` (see :func:`hf_symbolinv.pretrained.model_for`): a formula that
    parses as propositional goes to a prop model unless ``task`` is ``ltl``, an LTL formula to the LTL model;
    anything else is refused with the parser's message."""
    from ..logic import LogicSyntaxError, parse_ltl, parse_prop, symbols_of
    from ..pretrained import model_for

    parsers = {"prop": parse_prop, "ltl": parse_ltl}
    tried = [task] if task is not None else ["prop", "ltl"]
    problem = None
    for name in tried:
        try:
            formula = parsers[name](text, symbols=symbols)
        except (LogicSyntaxError, ValueError) as error:
            problem = error  # the last parser tried (LTL) reads the most
            continue
        return model_for(name, formula.size, len(symbols_of(formula)))
    what = f"a {task} formula" if task is not None else "a propositional or LTL formula"
    hint = (
        ""
        if any(ch.isspace() for ch in text.strip())
        else " (names other than single lowercase letters need spaces between tokens, or --symbols REGEX)"
    )
    raise ValueError(
        f"{problem}{hint}; without a MODEL, solve answers {what} with a shipped model: pass a MODEL folder"
    )


def as_logic(text: str, task: str, symbols: Any, answer: bool = False) -> str:
    """Re-print with the logic engine so that multi-character names parse the same way."""
    return get_task(task).in_own_names(text, symbols, answer)
