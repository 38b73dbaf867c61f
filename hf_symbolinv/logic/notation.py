"""The one place that defines the notations: operator spellings, Polish and infix, lexing,
parsing and printing of LTL formulas, symbolic lasso traces, propositional formulas and
assignments.

Notations
---------
* ``"polish"`` (the dataset format): prefix notation, ``&aXb``; traces ``a;&ab;{b}``;
  propositional formulas ``=a^bc`` (model vocabulary) or with ``<->``/``xor`` (file style);
  assignments ``a1b0``.
* ``"infix"`` (Spot's syntax): ``a & X b``; traces ``a; a & b; cycle{b}``.

Lexing follows the spec: text without whitespace is read character by character, except where
the :class:`~hf_symbolinv.utils.symbols.SymbolRule` matches a longer name (greedy); text with
whitespace is read as whitespace/punctuation-separated words, and any word that is not an
operator is a symbol name: a letter or ``_`` first, then letters, digits, ``_``, ``.`` or ``'``
(any other character is a syntax error naming it). In LTL infix, words are read as Spot's lexer
reads them: a word that begins with ``F``, ``G`` or ``X`` followed by a letter is that unary
operator applied to the rest (``GFa`` is ``G F a``, and so ``Grant`` is ``G rant``, ``Xray`` is
``X ray``), while ``F``, ``G`` or ``X`` followed by a digit begins a name (``X1``, ``G0_b``); a word
that begins with ``U``, ``R``, ``W`` or ``M`` right after an operand is that binary operator
(``a Ub`` is ``a U b``); ``true`` and ``false`` are read in any case. A propositional formula has
no temporal operators, so there every such word is a name (``Grant & Xray``). A name in double
quotes is a name whatever it spells (``"Grant"``, ``"X"``), and infix printing quotes a name that
would not read back as itself, as Spot does. Printing uses no separators when every token is one
character, otherwise single spaces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from ..utils.symbols import SymbolRule
from . import formula as _formula_module
from .formula import (
    FALSE,
    TRUE,
    And,
    Assignment,
    Atom,
    Const,
    Equiv,
    Formula,
    Next,
    Not,
    Or,
    Trace,
    Until,
    Xor,
    eventually,
    globally,
    implies,
    in_ltl_core,
    release,
    strong_release,
    weak_until,
)

__all__ = [
    "LogicSyntaxError",
    "NOTATIONS",
    "PROP_STYLES",
    "as_symbol_rule",
    "parse_ltl",
    "format_ltl",
    "parse_trace",
    "format_trace",
    "parse_prop",
    "format_prop",
    "format_formula",
    "parse_assignment",
    "format_assignment",
    "parse_as_written",
    "format_as_written",
]

NOTATIONS = ("polish", "infix")
#: What callers may pass as ``symbols``: a rule, an iterable of extra names, or None (letters).
Symbols = SymbolRule | Iterable[str] | None
PROP_STYLES = ("model", "file")

# --- spellings ------------------------------------------------------------------------------

#: Operator arities, by internal operator name.
ARITY: dict[str, int] = {
    "true": 0,
    "false": 0,
    "not": 1,
    "X": 1,
    "F": 1,
    "G": 1,
    "and": 2,
    "or": 2,
    "U": 2,
    "R": 2,
    "W": 2,
    "M": 2,
    "implies": 2,
    "equiv": 2,
    "xor": 2,
}
TEMPORAL_OPS = frozenset({"X", "F", "G", "U", "R", "W", "M"})

#: Punctuation spellings accepted on input (all notations). Longest match wins.
PUNCT_OPS: dict[str, str] = {
    "!": "not",
    "&": "and",
    "&&": "and",
    "|": "or",
    "||": "or",
    "->": "implies",
    "=>": "implies",
    "<->": "equiv",
    "<=>": "equiv",
    "=": "equiv",
    "^": "xor",
}
#: Delimiters of traces and infix grouping.
DELIMITERS = (";", "{", "}", "(", ")")
#: Word spellings accepted on input (as whole words, or as single characters in unsegmented text).
WORD_OPS: dict[str, str] = {
    "X": "X",
    "F": "F",
    "G": "G",
    "U": "U",
    "R": "R",
    "W": "W",
    "M": "M",
    "1": "true",
    "0": "false",
    "true": "true",
    "false": "false",
    "xor": "xor",
}
#: Single characters that are operators in unsegmented text.
CHAR_OPS: dict[str, str] = {k: v for k, v in WORD_OPS.items() if len(k) == 1}
#: The keyword that opens the cycle of an infix (Spot) trace.
CYCLE_KEYWORD = "cycle"

#: Output spellings. ``model`` is the model vocabulary (and the LTL dataset format); ``file``
#: spells equivalence and xor as the propositional data files do.
OUTPUT_SPELLING: dict[str, dict[str, str]] = {
    "model": {
        "true": "1",
        "false": "0",
        "not": "!",
        "and": "&",
        "or": "|",
        "X": "X",
        "U": "U",
        "equiv": "=",
        "xor": "^",
    },
    "file": {
        "true": "1",
        "false": "0",
        "not": "!",
        "and": "&",
        "or": "|",
        "X": "X",
        "U": "U",
        "equiv": "<->",
        "xor": "xor",
    },
}
INFIX_SPELLING: dict[str, dict[str, str]] = {
    "model": dict(OUTPUT_SPELLING["model"]),
    "file": dict(OUTPUT_SPELLING["file"]),
}
# Infix binding strength (higher binds tighter), as in Spot: -> <-> < | < xor < & < U < unary.
INFIX_LEVEL: dict[str, int] = {"implies": 1, "equiv": 1, "or": 2, "xor": 3, "and": 4, "U": 5, "R": 5, "W": 5, "M": 5}
RIGHT_ASSOC_LEVELS = frozenset({1, 5})
TOP_LEVEL = 1
UNARY_LEVEL = 6

#: Spellings that are two operators in Polish notation (``&&ab c``) and one only in infix.
INFIX_ONLY = frozenset({"&&", "||"})
_PUNCT_SORTED = sorted(list(PUNCT_OPS) + list(DELIMITERS), key=len, reverse=True)
_PUNCT_POLISH = [p for p in _PUNCT_SORTED if p not in INFIX_ONLY]
_PUNCT_CHARS = frozenset("".join(_PUNCT_SORTED)) | {"<", "-"}


class LogicSyntaxError(SyntaxError):
    """Malformed formula, trace or assignment text.

    The message names the (0-based) position and what was expected, e.g.
    ``position 3: expected an operand, found end of input in '&a|'``. The parts are also
    available as attributes ``position``, ``expected``, ``found`` and ``source``.
    """

    def __init__(self, source: str, position: int, expected: str, found: str) -> None:
        message = f"position {position}: expected {expected}, found {found} in {source!r}"
        super().__init__(message)
        self.source = source
        self.position = position
        self.expected = expected
        self.found = found

    def __str__(self) -> str:
        return self.msg


def as_symbol_rule(symbols: Symbols) -> SymbolRule:
    """A SymbolRule from ``None`` (single lowercase letters), a rule, or an iterable of names."""
    if symbols is None:
        return _DEFAULT_RULE
    if isinstance(symbols, SymbolRule):
        return symbols
    if type(symbols).__name__ == "SymbolRule":  # a model family's copy of the class (its tokenizer's rule)
        return SymbolRule.from_dict(symbols.to_dict())
    if isinstance(symbols, str):
        raise TypeError("pass a SymbolRule (or an iterable of names), not a string")
    return SymbolRule(pattern="[a-z]", names=list(symbols))


_DEFAULT_RULE = SymbolRule()


def _check_notation(notation: str) -> None:
    if notation not in NOTATIONS:
        raise ValueError(f"unknown notation {notation!r}; choose one of {NOTATIONS}")


# --- lexing ---------------------------------------------------------------------------------


class Token(NamedTuple):
    kind: str  # "op", "sym", "delim", "cycle", "end"
    value: str  # operator name, symbol name, delimiter text
    pos: int
    text: str  # the source spelling


def _describe(tok: Token) -> str:
    return "end of input" if tok.kind == "end" else repr(tok.text)


def tokenize(text: str, notation: str, rule: SymbolRule, xor_word: bool = False, temporal: bool = True) -> list[Token]:
    """Split ``text`` into tokens (see the module docstring for the rules); ``temporal=False`` (a propositional
    formula) reads every word that is not an operator of propositional logic as a name."""
    segmented = any(ch.isspace() for ch in text)
    spellings = _PUNCT_SORTED if notation == "infix" else _PUNCT_POLISH
    tokens: list[Token] = []
    append = tokens.append
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == '"':
            # A name in double quotes, as Spot writes a name its lexer would read otherwise ("Grant", "X").
            end = text.find('"', i + 1)
            if end < 0:
                raise LogicSyntaxError(
                    text, n, "a closing '\"' of the name opened at position " + str(i), "end of input"
                )
            if end == i + 1:
                raise LogicSyntaxError(text, i, "a name between the quotes", "'\"\"'")
            append(Token("sym", text[i + 1 : end], i, text[i : end + 1]))
            i = end + 1
            continue
        if ch in _PUNCT_CHARS:
            for spelling in spellings:
                if text.startswith(spelling, i):
                    if spelling in PUNCT_OPS:
                        append(Token("op", PUNCT_OPS[spelling], i, spelling))
                    else:
                        append(Token("delim", spelling, i, spelling))
                    i += len(spelling)
                    break
            else:
                raise LogicSyntaxError(text, i, "an operator, operand or delimiter", repr(ch))
            continue
        j = i
        while j < n and not text[j].isspace() and text[j] not in _PUNCT_CHARS:
            j += 1
        word = text[i:j]
        if notation == "infix" and word == CYCLE_KEYWORD:
            append(Token("cycle", word, i, word))
        elif segmented:
            _lex_word(text, word, i, notation, rule, tokens, temporal)
        else:
            _lex_chars(text, word, i, rule, tokens, xor_word)
        i = j
    append(Token("end", "", n, ""))
    return tokens


#: A name in whitespace-separated text: a letter or underscore first, then word characters, dots and primes.
_NAME_CHARS = frozenset("_.'")
#: Spot's lexer: after an operand, a word that begins with one of these is that binary operator.
_BINARY_LETTERS = frozenset("URWM")


def _bad_name_char(word: str) -> int | None:
    """The index of the first character of ``word`` that no name may have there, or None."""
    for k, ch in enumerate(word):
        if not (ch.isalpha() or ch == "_" or (k and (ch.isdigit() or ch in _NAME_CHARS))):
            return k
    return None


def _lex_word(
    text: str, word: str, pos: int, notation: str, rule: SymbolRule, out: list[Token], temporal: bool = True
) -> None:
    """A whitespace-separated word: an operator, or else a symbol name (see the module docstring)."""
    spot_rules = notation == "infix" and temporal
    while True:
        if word in WORD_OPS:  # single-letter temporal operators too: a propositional formula refuses them
            out.append(Token("op", WORD_OPS[word], pos, word))
            return
        if notation == "infix" and word.lower() in ("true", "false"):
            out.append(Token("op", word.lower(), pos, word))  # Spot reads TRUE, True, ... as constants
            return
        if rule.is_symbol(word):
            out.append(Token("sym", word, pos, word))
            return
        if spot_rules and len(word) > 1 and word[0] in "XFG" and not word[1].isdigit():
            # Spot reads ``Xa`` / ``GFa`` / ``Grant`` as unary operators applied to a name.
            out.append(Token("op", WORD_OPS[word[0]], pos, word[0]))
            word, pos = word[1:], pos + 1
            continue
        if (
            spot_rules
            and len(word) > 1
            and word[0] in _BINARY_LETTERS
            and out
            and (out[-1].kind == "sym" or out[-1].text == ")" or (out[-1].kind == "op" and ARITY[out[-1].value] == 0))
        ):
            # After an operand a name cannot follow, so Spot reads ``a Ub`` as ``a U b``.
            out.append(Token("op", WORD_OPS[word[0]], pos, word[0]))
            word, pos = word[1:], pos + 1
            continue
        bad = _bad_name_char(word)
        if bad is not None:
            found = repr(word[bad]) if len(word) == 1 else f"{word[bad]!r} in {word!r}"
            expected = "an operator or a symbol name (a letter or _ first, then letters, digits, _ . ')"
            raise LogicSyntaxError(text, pos + bad, expected, found)
        out.append(Token("sym", word, pos, word))
        return


def _lex_chars(text: str, word: str, pos: int, rule: SymbolRule, out: list[Token], xor_word: bool) -> None:
    """Unsegmented text: one token per character, except longer symbol names (greedy)."""
    k, n = 0, len(word)
    while k < n:
        if xor_word and word.startswith("xor", k):
            out.append(Token("op", "xor", pos + k, "xor"))
            k += 3
            continue
        m = rule.match_at(word, k)
        ch = word[k]
        if m > 1:
            out.append(Token("sym", word[k : k + m], pos + k, word[k : k + m]))
            k += m
        elif ch in CHAR_OPS:
            out.append(Token("op", CHAR_OPS[ch], pos + k, ch))
            k += 1
        elif m == 1:
            out.append(Token("sym", ch, pos + k, ch))
            k += 1
        else:
            raise LogicSyntaxError(text, pos + k, "an operator or a symbol", repr(ch))


# --- building nodes -------------------------------------------------------------------------

# Contexts: "ltl" rewrites derived temporal operators into ! & | X U and keeps <-> and xor (rewriting them
# doubles their operands); "prop" rejects temporal operators; "step" (a trace step) is "ltl" without them.
_CONTEXT_NAMES = {"ltl": "LTL formula", "prop": "propositional formula", "step": "trace step"}


def _build(op: str, args: list[Formula], context: str) -> Formula:
    if op == "not":
        return Not(args[0])
    if op == "and":
        return And(args[0], args[1])
    if op == "or":
        return Or(args[0], args[1])
    if op == "implies":
        return implies(args[0], args[1])
    if op == "equiv":
        return Equiv(args[0], args[1])
    if op == "xor":
        return Xor(args[0], args[1])
    if op == "X":
        return Next(args[0])
    if op == "U":
        return Until(args[0], args[1])
    if op == "F":
        return eventually(args[0])
    if op == "G":
        return globally(args[0])
    if op == "R":
        return release(args[0], args[1])
    if op == "W":
        return weak_until(args[0], args[1])
    if op == "M":
        return strong_release(args[0], args[1])
    raise AssertionError(op)  # pragma: no cover


def _check_op_allowed(text: str, tok: Token, context: str) -> None:
    if context != "ltl" and tok.value in TEMPORAL_OPS:
        raise LogicSyntaxError(
            text,
            tok.pos,
            f"an operand or a propositional operator (in a {_CONTEXT_NAMES[context]})",
            f"temporal operator {tok.text!r}",
        )


# --- Polish ---------------------------------------------------------------------------------


def _parse_polish(
    text: str, tokens: list[Token], i: int, context: str, build: Callable[..., Formula] | None = None
) -> tuple[Formula, int]:
    """One formula in prefix notation starting at token ``i``; iterative (no recursion limit)."""
    build = build or _build
    frames: list[tuple[str, list[Formula]]] = []
    while True:
        tok = tokens[i]
        if tok.kind == "op":
            _check_op_allowed(text, tok, context)
            arity = ARITY[tok.value]
            i += 1
            if arity:
                frames.append((tok.value, []))
                continue
            value: Formula = TRUE if tok.value == "true" else FALSE
        elif tok.kind == "sym":
            value = Atom(tok.value)
            i += 1
        else:
            raise LogicSyntaxError(text, tok.pos, "an operand", _describe(tok))
        while frames:
            op, args = frames[-1]
            args.append(value)
            if len(args) < ARITY[op]:
                break
            frames.pop()
            value = build(op, args, context)
        else:
            return value, i


# --- infix ----------------------------------------------------------------------------------


#: Deepest parenthesis nesting that infix input may have (the parser recurses once per level; the LTL
#: engine accepts formulas up to ``MAX_LTL_DEPTH`` deep anyway).
MAX_INFIX_NESTING = 300


class _InfixParser:
    def __init__(
        self, text: str, tokens: list[Token], context: str, build: Callable[..., Formula] | None = None
    ) -> None:
        self.build = build or _build
        self.text = text
        self.tokens = tokens
        self.i = 0
        self.context = context
        self.depth = 0  # open parentheses

    def peek(self) -> Token:
        return self.tokens[self.i]

    def expect_delim(self, delim: str, what: str | None = None) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "delim" or tok.value != delim:
            raise LogicSyntaxError(self.text, tok.pos, what or repr(delim), _describe(tok))
        self.i += 1
        return tok

    def parse(self, min_level: int = TOP_LEVEL) -> Formula:
        # Precedence climbing: one call per parenthesis and per precedence step, not one per operand of a
        # chain, so nesting costs a few frames a level (and :data:`MAX_INFIX_NESTING` bounds it).
        left = self.parse_unary()
        while True:
            tok = self.peek()
            if tok.kind != "op" or tok.value not in INFIX_LEVEL or INFIX_LEVEL[tok.value] < min_level:
                return left
            level = INFIX_LEVEL[tok.value]
            _check_op_allowed(self.text, tok, self.context)
            self.i += 1
            if level not in RIGHT_ASSOC_LEVELS:
                left = self.build(tok.value, [left, self.parse(level + 1)], self.context)
                continue
            # A right-associative chain (a U b U c ...) is gathered in a loop and folded from the right: a
            # recursive call per operand would overflow the stack on long chains.
            operands, ops = [left, self.parse(level + 1)], [tok.value]
            while (tok := self.peek()).kind == "op" and INFIX_LEVEL.get(tok.value) == level:
                _check_op_allowed(self.text, tok, self.context)
                self.i += 1
                ops.append(tok.value)
                operands.append(self.parse(level + 1))
            left = operands.pop()
            for op in reversed(ops):
                left = self.build(op, [operands.pop(), left], self.context)

    def parse_unary(self) -> Formula:
        ops: list[str] = []
        while True:
            tok = self.peek()
            if tok.kind == "op" and ARITY[tok.value] == 1:
                _check_op_allowed(self.text, tok, self.context)
                ops.append(tok.value)
                self.i += 1
                continue
            break
        tok = self.peek()
        if tok.kind == "op" and ARITY[tok.value] == 0:
            value: Formula = TRUE if tok.value == "true" else FALSE
            self.i += 1
        elif tok.kind == "sym":
            value = Atom(tok.value)
            self.i += 1
        elif tok.kind == "delim" and tok.value == "(":
            self.depth += 1
            if self.depth > MAX_INFIX_NESTING:
                raise LogicSyntaxError(
                    self.text, tok.pos, f"at most {MAX_INFIX_NESTING} nested parentheses", "one more '('"
                )
            self.i += 1
            value = self.parse(TOP_LEVEL)
            self.expect_delim(")", "')' or a binary operator")
            self.depth -= 1
        else:
            raise LogicSyntaxError(self.text, tok.pos, "an operand", _describe(tok))
        for op in reversed(ops):
            value = self.build(op, [value], self.context)
        return value


# --- public: formulas -----------------------------------------------------------------------


def _parse_formula(
    text: str, notation: str, symbols: Symbols, context: str, build: Callable[..., Formula] | None = None
) -> Formula:
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {type(text).__name__}")
    _check_notation(notation)
    rule = as_symbol_rule(symbols)
    try:
        return _parse_formula_once(text, notation, rule, context, xor_word=False, build=build)
    except LogicSyntaxError as first_error:
        # Unsegmented text may spell xor as a word (``xor&ab!c``); with letter symbols that is
        # ambiguous, so the word is only tried when the letter reading fails.
        if "xor" in text and not any(ch.isspace() for ch in text):
            try:
                return _parse_formula_once(text, notation, rule, context, xor_word=True, build=build)
            except LogicSyntaxError:
                pass
        raise first_error from None


def _parse_formula_once(
    text: str,
    notation: str,
    rule: SymbolRule,
    context: str,
    xor_word: bool,
    build: Callable[..., Formula] | None = None,
) -> Formula:
    tokens = tokenize(text, notation, rule, xor_word, temporal=context == "ltl")
    if notation == "polish":
        formula, i = _parse_polish(text, tokens, 0, context, build)
    else:
        parser = _InfixParser(text, tokens, context, build)
        formula = parser.parse()
        i = parser.i
    tok = tokens[i]
    if tok.kind != "end":
        expected = "end of input" if notation == "polish" else "end of input or a binary operator"
        raise LogicSyntaxError(text, tok.pos, expected, _describe(tok))
    return formula


def parse_ltl(text: str, notation: str = "polish", symbols: Symbols = None) -> Formula:
    """Parse an LTL formula; derived operators (F G -> R W M) are rewritten to ! & | X U, while <-> and xor
    stay nodes of their own (see :func:`~hf_symbolinv.logic.formula.in_ltl_core` for the model vocabulary)."""
    return _parse_formula(text, notation, symbols, "ltl")


def parse_prop(text: str, notation: str = "polish", symbols: Symbols = None) -> Formula:
    """Parse a propositional formula (! & | <-> xor, also spelled = and ^; -> is rewritten)."""
    return _parse_formula(text, notation, symbols, "prop")


class Written(Formula):
    """A formula node as the user wrote it, derived operators (``F G R W M ->``) kept: what the user reads back
    (:func:`parse_as_written`, :func:`format_as_written`). Only for printing; the logic engine and the models
    work on the parsed :class:`Formula`."""

    __slots__ = ("_op", "arity")

    def __init__(self, op: str, children: Sequence[Formula]) -> None:
        self._op = op
        self.arity = len(children)
        self.children = tuple(children)
        self.size = 1 + sum(child.size for child in children)
        self._hash = hash((op, *(child._hash for child in children)))

    @property
    def op(self) -> str:  # type: ignore[override]
        return self._op

    def _key(self) -> tuple:
        return (self._op,)


def _build_written(op: str, args: list[Formula], context: str) -> Formula:
    return Written(op, args)


#: How :func:`format_as_written` spells each operator: the user's operators, ``<->`` and ``xor`` as words.
WRITTEN_SPELLING: dict[str, str] = {
    **OUTPUT_SPELLING["file"],
    "F": "F",
    "G": "G",
    "R": "R",
    "W": "W",
    "M": "M",
    "implies": "->",
}


def parse_as_written(text: str, notation: str = "polish", symbols: Symbols = None, task: str = "ltl") -> Formula:
    """``text`` read as :func:`parse_ltl` (``task="ltl"``) or :func:`parse_prop` (``"prop"``) read it, but with the
    operators as written (a tree of :class:`Written` nodes over atoms and constants), for printing back."""
    if task not in ("ltl", "prop"):
        raise ValueError(f"unknown task {task!r}; choose ltl or prop")
    return _parse_formula(text, notation, symbols, task, build=_build_written)


def format_as_written(f: Formula, notation: str = "infix") -> str:
    """A formula from :func:`parse_as_written` (or any formula) in ``notation`` with the operators the user wrote:
    infix as Spot writes it (``G (a -> F b)``), Polish with a space between tokens (``G -> a F b``)."""
    _check_notation(notation)
    if notation == "polish":
        return " ".join(_polish_tokens(f, WRITTEN_SPELLING))
    return _infix(f, WRITTEN_SPELLING)


def _polish_tokens(f: Formula, spelling: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    stack = [f]
    while stack:
        node = stack.pop()
        if isinstance(node, Atom):
            out.append(node.name)
        else:
            out.append(spelling[node.op])
            if node.children:
                stack.extend(reversed(node.children))
    return out


def _reads_back_unsegmented(token: str) -> bool:
    """Whether ``token`` lexes back as itself in unsegmented text under the default symbol rule: an operator or
    delimiter character, or a lowercase letter (``Q``, ``_`` or ``α`` would not: they need whitespace)."""
    return len(token) == 1 and (token in CHAR_OPS or token in _PUNCT_CHARS or "a" <= token <= "z")


def _join(tokens: list[str]) -> str:
    if all(map(_reads_back_unsegmented, tokens)):
        return "".join(tokens)
    if len(tokens) == 1:
        # Whitespace is what marks text as whitespace-separated: without it, one long name ("a0", "F0")
        # would be read back character by character (a then 0, or F 0). The trailing space keeps it one name.
        return tokens[0] + " "
    return " ".join(tokens)


def _needs_parentheses(parent: Formula, child: Formula, right: bool) -> bool:
    if child.arity != 2:
        return False
    if parent.arity == 1:
        return True
    level, child_level = INFIX_LEVEL[parent.op], INFIX_LEVEL[child.op]
    if child_level != level:
        return child_level < level
    if child.op != parent.op:
        return True
    # The same operator: parenthesise the side its associativity does not group.
    return right != (level in RIGHT_ASSOC_LEVELS)


def infix_name(name: str) -> str:
    """``name`` as infix writes it: as it is where LTL infix reads it back as that name, else in double quotes, as
    Spot writes it (``"Grant"``: unquoted, Spot's lexer reads ``G rant``; ``"X"``, ``"true"``, ``"a b"``)."""
    plain = (
        _bad_name_char(name) is None
        and name not in WORD_OPS
        and name.lower() not in ("true", "false", CYCLE_KEYWORD)
        and not (len(name) > 1 and name[0] in "XFG" and not name[1].isdigit())
        and '"' not in name
    )
    return name if plain else f'"{name}"'


def _infix(f: Formula, spelling: Mapping[str, str]) -> str:
    # Iterative (a formula nests as deep as its input): a stack of pieces still to write, each a string
    # or a node; a node pushes its own pieces in reverse so that they pop in reading order.
    out: list[str] = []
    stack: list[str | Formula] = [f]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Atom):
            out.append(infix_name(item.name))
        elif isinstance(item, Const):
            out.append(spelling[item.op])
        elif item.arity == 1:
            arg = item.children[0]
            # ``!a`` like Spot; temporal unary operators get a space so that ``X b`` stays readable.
            if _needs_parentheses(item, arg, right=False):
                stack.extend((")", arg, "("))
            else:
                stack.append(arg)
            out.append(spelling[item.op] + ("" if item.op == "not" or arg.arity == 2 else " "))
        else:
            left, right = item.children
            for child, is_right in ((right, True), (left, False)):
                if _needs_parentheses(item, child, is_right):
                    stack.extend((")", child, "("))
                else:
                    stack.append(child)
                if is_right:
                    stack.append(f" {spelling[item.op]} ")
    return "".join(out)


def format_formula(f: Formula, notation: str = "polish", style: str = "model") -> str:
    """Print any formula (LTL or propositional) in ``notation`` with the ``style`` spellings."""
    _check_notation(notation)
    if style == "ltl":
        style = "model"
    if style not in PROP_STYLES:
        raise ValueError(f"unknown style {style!r}; choose one of {PROP_STYLES}")
    if notation == "polish":
        return _join(_polish_tokens(f, OUTPUT_SPELLING[style]))
    text = _infix(f, INFIX_SPELLING[style])
    if not any(ch.isspace() for ch in text) and not all(
        _reads_back_unsegmented(node.name) for node in f.distinct_nodes() if isinstance(node, Atom)
    ):
        # `Q`, `!x'` or `a.b` alone: without whitespace the text would be read letter by letter; a space marks it
        # as whitespace-separated, where any word is a name (as `_join` does for Polish).
        text += " "
    return text


def polish_tokens(f: Formula, style: str = "model") -> list[str]:
    """The Polish-notation tokens of ``f`` with the ``style`` spellings (for callers that join them their own
    way, e.g. always with spaces)."""
    if style not in OUTPUT_SPELLING:
        raise ValueError(f"unknown style {style!r}; choose one of {sorted(OUTPUT_SPELLING)}")
    return _polish_tokens(f, OUTPUT_SPELLING[style])


def format_ltl(f: Formula | str, notation: str = "polish") -> str:
    """Print an LTL formula in the LTL model vocabulary (``&aXb`` or ``a & X b``): ``<->`` and ``xor``, which
    it lacks, are rewritten into ``! & |`` (a ``ValueError`` when that exceeds ``MAX_CORE_SIZE`` nodes).
    ``format_formula(f, notation, "file")`` prints them as they are."""
    if isinstance(f, str):
        f = parse_ltl(f)
    return format_formula(in_ltl_core(f), notation, "model")


def format_prop(f: Formula | str, notation: str = "polish", style: str = "model") -> str:
    """Print a propositional formula; style ``model`` spells = ^, ``file`` spells <-> xor."""
    if isinstance(f, str):
        f = parse_prop(f)
    return format_formula(f, notation, style)


# --- traces ---------------------------------------------------------------------------------


def parse_trace(text: str, notation: str = "polish", symbols: Symbols = None) -> Trace:
    """Parse a symbolic lasso: ``a;&ab;{b}`` (Polish) or ``a; a & b; cycle{b}`` (infix)."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {type(text).__name__}")
    _check_notation(notation)
    rule = as_symbol_rule(symbols)
    tokens = tokenize(text, notation, rule, temporal=False)  # steps are propositional
    prefix: list[Formula] = []
    cycle: list[Formula] = []
    i = 0
    steps = prefix
    in_cycle = False

    def parse_step(i: int) -> tuple[Formula, int]:
        if notation == "polish":
            return _parse_polish(text, tokens, i, "step")
        parser = _InfixParser(text, tokens, "step")
        parser.i = i
        return parser.parse(), parser.i

    while True:
        tok = tokens[i]
        if not in_cycle and (tok.kind == "cycle" or (tok.kind == "delim" and tok.value == "{")):
            if tok.kind == "cycle":
                i += 1
                tok = tokens[i]
                if not (tok.kind == "delim" and tok.value == "{"):
                    raise LogicSyntaxError(text, tok.pos, "'{' after 'cycle'", _describe(tok))
            in_cycle = True
            steps = cycle
            i += 1
            continue
        step, i = parse_step(i)
        steps.append(step)
        tok = tokens[i]
        if tok.kind == "delim" and tok.value == ";":
            i += 1
            continue
        if in_cycle and tok.kind == "delim" and tok.value == "}":
            i += 1
            break
        expected = "';' or '}'" if in_cycle else "';'"
        raise LogicSyntaxError(text, tok.pos, expected, _describe(tok))
    tok = tokens[i]
    if tok.kind != "end":
        raise LogicSyntaxError(text, tok.pos, "end of input after the cycle", _describe(tok))
    return Trace(prefix, cycle)


def format_trace(trace: Trace | str, notation: str = "polish", style: str = "model") -> str:
    """Print a trace: ``a;&ab;{b}`` (Polish) or ``a; a & b; cycle{b}`` (infix). Style ``model`` writes the LTL
    model vocabulary (steps' ``<->`` and ``xor`` rewritten, as in :func:`format_ltl`); ``file`` spells them
    ``<->`` and ``xor``."""
    if isinstance(trace, str):
        trace = parse_trace(trace)
    _check_notation(notation)
    if style not in PROP_STYLES:
        raise ValueError(f"unknown style {style!r}; choose one of {PROP_STYLES}")
    spelling = OUTPUT_SPELLING[style]
    prefix, cycle = trace.prefix, trace.cycle
    if style == "model":
        prefix, cycle = tuple(map(in_ltl_core, prefix)), tuple(map(in_ltl_core, cycle))
    if notation == "infix":
        written = "".join(f"{_infix(step, spelling)}; " for step in prefix)
        return written + "cycle{" + "; ".join(_infix(step, spelling) for step in cycle) + "}"
    tokens: list[str] = []
    for step in prefix:
        tokens.extend(_polish_tokens(step, spelling))
        tokens.append(";")
    tokens.append("{")
    for k, step in enumerate(cycle):
        if k:
            tokens.append(";")
        tokens.extend(_polish_tokens(step, spelling))
    tokens.append("}")
    return _join(tokens)


# --- assignments ----------------------------------------------------------------------------


def parse_assignment(text: str, symbols: Symbols = None) -> Assignment:
    """Parse ``a1b0`` (or ``p12 1 q 0``) into ``{"a": True, "b": False}``."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {type(text).__name__}")
    rule = as_symbol_rule(symbols)
    tokens = tokenize(text, "polish", rule)
    result: Assignment = {}
    i = 0
    while tokens[i].kind != "end":
        tok = tokens[i]
        if tok.kind != "sym":
            raise LogicSyntaxError(text, tok.pos, "a symbol", _describe(tok))
        if tok.value in result:
            raise LogicSyntaxError(text, tok.pos, "a symbol not assigned yet", _describe(tok))
        value = tokens[i + 1]
        if value.kind != "op" or value.value not in ("true", "false"):
            raise LogicSyntaxError(text, value.pos, "'0' or '1'", _describe(value))
        result[tok.value] = value.value == "true"
        i += 2
    return result


def format_assignment(assignment: Mapping[str, bool], order: Sequence[str] | None = None) -> str:
    """Print an assignment sorted by symbol name: ``a1b0`` (``p12 1 q 0`` with long names), or with its symbols in
    the sequence ``order`` (which must name every symbol of the assignment)."""
    if order is not None and set(assignment) - set(order):
        missing = sorted(set(assignment) - set(order))
        raise ValueError(f"order {list(order)!r} lacks symbols of the assignment: {missing}")
    tokens: list[str] = []
    for name in sorted(assignment) if order is None else [name for name in order if name in assignment]:
        tokens.append(name)
        tokens.append("1" if assignment[name] else "0")
    return _join(tokens)


def _print_formula(f: Formula) -> str:
    """``str`` of a formula: Polish notation, in the model vocabulary unless it has propositional-only operators."""
    return format_formula(f, "polish", style="model" if f._has_prop_only_ops() else "ltl")


# ``str`` of a formula and of a trace (formula.py, the lower module, does not import this one).
_formula_module.PRINTERS.update(formula=_print_formula, trace=format_trace)
