"""Reading a formula the way a user types it: the one reader of ``symbolinv solve`` and the web page.

:func:`read_formula` reads Polish or infix, propositional or LTL, in any names (Spot's reading of words in LTL
infix, see :mod:`.notation`), checks the limits that bound the work a formula may cost (its length, and its size
in what the model and the exact solver will actually process: ``<->`` and ``xor`` rewritten into ``! & |`` for the
LTL model), and keeps the user's operators for printing it back. It imports no torch, so a syntax error is
answered before any model is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..utils.symbols import SymbolRule
from .formula import Formula, in_ltl_core
from .helpers import symbols_of
from .notation import (
    NOTATIONS,
    LogicSyntaxError,
    format_as_written,
    format_ltl,
    format_prop,
    parse_as_written,
    parse_ltl,
    parse_prop,
    polish_tokens,
    tokenize,
)

__all__ = [
    "MAX_INPUT_CHARS",
    "MAX_FORMULA_NODES",
    "TASKS",
    "TASK_NAMES",
    "InputError",
    "ReadFormula",
    "read_formula",
    "syntax_error",
]

#: The longest input read, in characters: longer text is refused before it is parsed.
MAX_INPUT_CHARS = 2000
#: The largest formula, in nodes of what the model and the exact solver process (``<->`` and ``xor`` rewritten
#: for the LTL model), that is answered. The shipped models were trained on at most 35 nodes; the checkers recurse
#: over formulas deeper than a few hundred levels, which Python refuses.
MAX_FORMULA_NODES = 200
#: The tasks a formula is read as.
TASKS = ("prop", "ltl")
#: How each task is named to the user.
TASK_NAMES = {"prop": "propositional", "ltl": "LTL"}
#: The default reading: single lowercase letters in unsegmented text; any name in whitespace-separated text.
DEFAULT_RULE = SymbolRule()
#: A name as the pipeline reads names in whitespace-separated text (a letter or underscore first).
NAME = re.compile(r"[^\W\d][\w.']*")
#: What each operator letter means, for messages that say a letter is an operator.
OPERATOR_LETTERS = {
    "X": "next",
    "F": "eventually",
    "G": "globally",
    "U": "until",
    "R": "release",
    "W": "weak until",
    "M": "strong release",
}


class InputError(ValueError):
    """Input that cannot be answered, with a message for the user: for a syntax error, the ``position`` (0-based)
    and the ``source`` text, so that a caller can point at it."""

    def __init__(self, message: str, position: int | None = None, source: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.source = source

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ReadFormula:
    """A formula as it was read: the text typed, its notation and task, the parsed formula, the formula with the
    operators as written (for printing back), the text the model is given (Polish notation in the model's
    operators, in the user's names), its size there, its distinct symbols in order of first appearance, and notes
    on how words were read (``Grant`` read as ``G rant``, as Spot reads it)."""

    source: str
    notation: str
    task: str
    formula: Formula
    written: Formula
    polish: str
    model_size: int
    names: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return self.formula.size

    @property
    def infix(self) -> str:
        """Infix with the user's operators (``G (a -> F b)``), as Spot writes it."""
        return format_as_written(self.written, "infix").strip()

    @property
    def polish_spaced(self) -> str:
        """Polish with the user's operators, a space between tokens (``G -> a F b``)."""
        return format_as_written(self.written, "polish")

    @property
    def model_polish_spaced(self) -> str:
        """What the model is given, a space between tokens (``! U 1 ! | ! a ! U 1 ! b``)."""
        model_formula = in_ltl_core(self.formula) if self.task == "ltl" else self.formula
        return " ".join(polish_tokens(model_formula, "model"))


def _parser(task: str) -> Callable[..., Formula]:
    return parse_prop if task == "prop" else parse_ltl


def read_formula(text: str, task: str | None = None, symbols: SymbolRule | None = None) -> ReadFormula:
    """Read ``text`` as a formula of ``task`` (``prop``, ``ltl``, or ``None``: propositional if it parses as such, else
    LTL) in Polish or infix notation, whichever parses (Polish first; a formula such as ``! a`` reads the same in
    both), with ``symbols`` (default: any name in whitespace-separated text). An :class:`InputError` says what is
    wrong: empty or too long input, a formula over the size limit (naming its size as the model gets it), or the
    syntax error of the reading that got furthest, with its position."""
    rule = symbols if symbols is not None else DEFAULT_RULE
    source = text.strip()
    if not source:
        raise InputError("type a formula, e.g. & Rain | Snow ! Wind (Polish) or Rain & (Snow | !Wind) (infix)")
    if len(source) > MAX_INPUT_CHARS:
        raise InputError(f"the input has {len(source):,} characters; formulas of at most {MAX_INPUT_CHARS:,} are read")
    if task is not None and task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    tasks = [task] if task is not None else list(TASKS)
    furthest: LogicSyntaxError | None = None
    for notation in NOTATIONS:
        for name in tasks:
            try:
                formula = _parser(name)(source, notation, rule)
            except LogicSyntaxError as error:
                # The reading that got furthest names the real problem ("& a |": Polish, at the end; "a & (b |":
                # infix, at the end); on a tie the later one (LTL reads more, infix says more about operands).
                if furthest is None or error.position >= furthest.position:
                    furthest = error
                continue
            except ValueError as error:  # e.g. an LTL formula too large to rewrite into the model's operators
                raise InputError(f"cannot read this formula: {error}") from None
            return _checked(source, notation, name, formula, rule)
    if NAME.fullmatch(source):
        # One word alone ("Rain"): text without spaces is read letter by letter; as a word it is one name.
        formula = _parser(tasks[0])(source + " ", "polish", rule)
        return _checked(source + " ", "polish", tasks[0], formula, rule)
    assert furthest is not None
    raise syntax_error(furthest, source, task, rule)


def syntax_error(
    error: LogicSyntaxError, source: str, task: str | None = None, symbols: SymbolRule | None = None
) -> InputError:
    """The message for a syntax error: the position and character in the user's words, what was expected, and
    where an operator letter stands where a name was wanted, that it is an operator."""
    what = f"a {TASK_NAMES[task]} formula" if task is not None else "a formula"
    message = f"syntax error at position {error.position}: expected {error.expected}, found {error.found}"
    hint = ""
    letters = _operator_letters(source, symbols or DEFAULT_RULE)
    if letters and "operand" in error.expected:
        hint = "; " + ", ".join(
            f"{letter!r} at position {pos} is the LTL operator {OPERATOR_LETTERS[letter]}, not a name"
            for letter, pos in letters[:3]
        )
        hint += " (use other names, e.g. lowercase ones)"
    elif not any(ch.isspace() for ch in source) and len(source) > 1:
        hint = " (names other than single lowercase letters need spaces between tokens: & Rain Snow)"
    return InputError(f"{message}; cannot read this as {what}{hint}", position=error.position, source=source)


def _operator_letters(source: str, rule: SymbolRule) -> list[tuple[str, int]]:
    """The single uppercase operator letters written as words of their own in whitespace-separated text."""
    if not any(ch.isspace() for ch in source):
        return []
    try:
        tokens = tokenize(source, "polish", rule)
    except LogicSyntaxError:
        return []
    return [(token.text, token.pos) for token in tokens if token.kind == "op" and token.text in OPERATOR_LETTERS]


def _split_words(source: str, notation: str, rule: SymbolRule) -> tuple[str, ...]:
    """Notes on the words of LTL infix that Spot's rule reads as operators applied to a name (``Grant``)."""
    if notation != "infix" or not any(ch.isspace() for ch in source):
        return ()
    tokens = tokenize(source, notation, rule)
    notes = []
    k = 0
    while k < len(tokens):
        start = k
        while tokens[k].kind == "op" and len(tokens[k].text) == 1 and tokens[k + 1].pos == tokens[k].pos + 1:
            k += 1
        if k > start and tokens[k].kind == "sym" and tokens[start].text.isupper():
            word = source[tokens[start].pos : tokens[k].pos + len(tokens[k].text)]
            if len(tokens[k].text) > 1:  # GFa is the usual spelling of G F a; Grant is more likely a name
                spelled = " ".join(token.text for token in tokens[start : k + 1])
                notes.append(
                    f"{word!r} is read as {spelled!r}, as Spot reads it (in LTL infix a name cannot begin with F, G "
                    "or X followed by a letter); write another name to mean a symbol"
                )
        k += 1
    return tuple(notes)


def _checked(source: str, notation: str, task: str, formula: Formula, rule: SymbolRule) -> ReadFormula:
    try:
        model_formula = in_ltl_core(formula) if task == "ltl" else formula
    except ValueError as error:  # <-> and xor rewritten into the LTL model's operators can grow too large
        raise InputError(f"cannot give this formula to the model: {error}") from None
    if model_formula.size > MAX_FORMULA_NODES:
        rewritten = (
            f" and {model_formula.size:,} with <-> and xor rewritten into ! & | (the LTL model's operators)"
            if model_formula.size != formula.size
            else ""
        )
        raise InputError(
            f"the formula has {formula.size:,} nodes{rewritten}; formulas of at most {MAX_FORMULA_NODES} nodes are "
            "answered (the shipped models were trained on formulas of at most 35)"
        )
    names = symbols_of(formula)
    polish = format_prop(formula) if task == "prop" else format_ltl(formula)
    written = parse_as_written(source, notation, rule, task)
    notes = _split_words(source, notation, rule) if task == "ltl" else ()
    return ReadFormula(source.strip(), notation, task, formula, written, polish, model_formula.size, names, notes)


def answer_forms(text: str, task: str, symbols: SymbolRule | None = None) -> tuple[str, str] | None:
    """An answer as it is shown, the same whatever the names: for ``prop`` an assignment as ``Rain = true, Wind =
    false`` and ``Rain 1 Wind 0``; for ``ltl`` a trace in infix (``a; cycle{1}``) and in Polish with spaces (``a ; {
    1 }``). ``None`` for text that is no answer of the task (an invalid answer is shown as written)."""
    from .notation import format_trace, parse_assignment, parse_trace

    rule = symbols if symbols is not None else DEFAULT_RULE
    try:
        if task == "prop":
            assignment = parse_assignment(text, rule)
            readable = ", ".join(f"{name} = {'true' if value else 'false'}" for name, value in assignment.items())
            return readable or "(any assignment)", " ".join(
                token for name, value in assignment.items() for token in (name, "1" if value else "0")
            )
        if task == "ltl":
            trace = parse_trace(text, symbols=rule)
            compact = format_trace(trace, "polish", "file")
            spaced = " ".join(token.text for token in tokenize(compact, "polish", rule) if token.kind != "end")
            return format_trace(trace, "infix", "file"), spaced
    except (LogicSyntaxError, ValueError):
        return None
    return None
