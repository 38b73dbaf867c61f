"""The tasks: everything task-specific in one module each (``ltl.py``, ``prop.py``, ``copy.py``, ``kinship.py``,
``clutrr.py``, ``trees.py`` (task ``tree``), ``nnf.py``).

A :class:`Task` holds a task's vocabulary, its default symbol rule, how an answer is judged, how an
input is measured, how inputs and answers are re-printed in a user's own symbol names, and the text a
model card says about it. The command line, evaluation, training metrics and model cards ask the task;
adding a task is one new module that calls :func:`register_task`. The vocabularies that ``Task.vocabulary`` names
for the sequence tasks (base tokens in id order, operator arities) are defined in :mod:`.vocabulary`.

Plain Python: importing a task imports neither torch nor transformers.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class Judgement:
    """The verdict on one predicted answer."""

    correct: bool
    exact: bool
    invalid: bool = False
    unknown: bool = False
    edit_distance: int | None = None

    @property
    def state(self) -> str:
        """The verdict in one word, as ``solve`` and the web page print it: ``invalid`` (unreadable), ``unknown``
        (the checker could not decide in time), ``correct`` or ``incorrect``."""
        if self.invalid:
            return "invalid"
        if self.unknown:
            return "unknown"
        return "correct" if self.correct else "incorrect"


@dataclass(frozen=True)
class Task:
    """One task. ``judge(source, prediction, reference, timeout)`` decides an answer; ``input_size`` is the
    heatmap's length axis; ``symbol_names`` the symbols of an input; ``in_own_names(text, symbols,
    answer)`` re-prints an input (or answer) parsed with a user's symbol rule (identity when the task has
    nothing to parse)."""

    name: str
    vocabulary: str
    description: str
    example: str
    intended_use: str
    judge: Callable[[str, str, str | None, float | None], Judgement]
    input_size: Callable[[str], int]
    symbol_names: Callable[[str], list[str]]
    in_own_names: Callable[[str, Any, bool], str] = lambda text, symbols, answer: text
    #: The target as training teaches it (``symbolinv train``); judging is unaffected. The default: as written.
    teaching_target: Callable[[str, str], str] = lambda source, target: target
    #: Another way of writing an input, drawn with the given generator, that has the same answers and that the task's
    #: datasets draw as readily, with the target its datasets would write for it, given the row's input and target
    #: (``symbolinv train --augment commute``; None: the task has none). See :func:`commuter`.
    commuted: Callable[[str, str, random.Random], tuple[str, str]] | None = None
    #: The default symbol rule's pattern (None: single lowercase letters).
    symbol_pattern: str | None = None
    #: The most new tokens (end of sequence included) a correct answer to an input can take, or None when the task
    #: bounds none. Generation stops there: an undertrained model's answer that never ends costs no more.
    answer_budget: Callable[[str], int] | None = None


def reprinter(
    parse_input: Callable[..., Any],
    format_input: Callable[[Any], str],
    parse_answer: Callable[..., Any],
    format_answer: Callable[[Any], str],
) -> Callable[[str, Any, bool], str]:
    """A task's ``in_own_names``: parse with the user's symbol rule and print with the logic engine, so that
    multi-character names read the same way everywhere; text that does not parse is returned as it is."""

    def in_own_names(text: str, symbols: Any, answer: bool = False) -> str:
        from ..logic import LogicSyntaxError

        if symbols is None:
            return text
        parse, format_ = (parse_answer, format_answer) if answer else (parse_input, format_input)
        try:
            return format_(parse(text, symbols=symbols))
        except LogicSyntaxError:
            return text

    return in_own_names


def commuter(
    parse_input: Callable[[str], Any],
    format_input: Callable[[Any], str],
    written_answer: Callable[[Any], str | None] | None = None,
) -> Callable[[str, str, random.Random], tuple[str, str]]:
    """A logic task's ``commuted``: the formula with the operands of each ``&``, ``|``, ``<->`` and ``xor`` swapped
    with probability 1/2 (:func:`hf_symbolinv.logic.commute_operands`), and its target. It holds in the same states, so
    every answer stays correct; and the random-formula generators draw both operands of a binary operator alike (sizes
    split uniformly, the same simplifications either way round), so the swapped formula is one they draw as often:
    new samples of the training distribution, from the same solved formulas. (Exactly so for the datasets'
    priorities, which draw no operator that is rewritten into ``|`` or ``&`` with its operands in a fixed order, like
    ``->`` or ``W``.)

    ``written_answer``: the answer the task's datasets write for a formula. The row's answer stays correct for the
    new form, but it need not be the one the datasets write for it: a solver's search follows the operands' order (the
    trace differs for 28% of the ltl-35 training formulas whose form changes, the canonical minimal assignment for 29%
    of prop-35's), and a model taught the row's answer on the new form learns two conventions at once. None (or no
    answer found) keeps the row's."""

    def commuted(text: str, target: str, rng: random.Random) -> tuple[str, str]:
        from ..logic import commute_operands

        formula = commute_operands(parse_input(text), rng)
        answer = written_answer(formula) if written_answer is not None else None
        return format_input(formula), target if answer is None else answer

    return commuted


_TASKS: dict[str, Task] = {}
_BUILT_IN = ("ltl", "prop", "copy", "kinship", "clutrr", "trees", "nnf")


def register_task(task: Task) -> Task:
    """Make ``task`` known to the command line, evaluation and model cards (idempotent per name)."""
    _TASKS[task.name] = task
    return task


def _load_built_in() -> None:
    for name in _BUILT_IN:
        if name not in _TASKS:
            import_module(f"{__name__}.{name}")


def task_names() -> tuple[str, ...]:
    _load_built_in()
    return tuple(sorted(_TASKS))


def get_task(name: str) -> Task:
    _load_built_in()
    try:
        return _TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(sorted(_TASKS))}") from None


def task_for_vocabulary(vocabulary: str) -> Task:
    """The task whose models use ``vocabulary`` (a model config's ``vocabulary`` field)."""
    _load_built_in()
    for task in _TASKS.values():
        if task.vocabulary == vocabulary:
            return task
    raise ValueError(f"no task uses the vocabulary {vocabulary!r}; known tasks: {', '.join(sorted(_TASKS))}")


__all__ = ["Judgement", "Task", "get_task", "register_task", "task_for_vocabulary", "task_names"]
