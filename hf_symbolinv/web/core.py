"""What the web demo computes, without Gradio: reading a formula typed in either notation, renaming its symbols,
comparing answers up to a renaming, and what the page shows of a model folder (its card's figures, its heatmap).

Everything here is plain Python over the logic engine, so it is tested without a browser or Gradio.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import logic
from ..logic.notation import tokenize

# The reader is the one `symbolinv solve` uses: the page reads exactly what the command reads.
from ..logic.reading import DEFAULT_RULE as _DEFAULT_RULE
from ..logic.reading import (  # noqa: F401 (the page's names for them)
    MAX_FORMULA_NODES,
    MAX_INPUT_CHARS,
    TASK_NAMES,
    TASKS,
    InputError,
    ReadFormula,
    read_formula,
    syntax_error,
)

#: New names for the "words" renaming. None starts with X, F or G: infix notation reads ``Xa`` as ``X a``, so such a
#: word would be read as an operator applied to the rest of it.
RENAMING_WORDS = (
    "Cloud",
    "Hail",
    "Storm",
    "Mist",
    "Breeze",
    "Thunder",
    "Sleet",
    "Dew",
    "Tide",
    "Drizzle",
    "Sun",
    "Moon",
    "Star",
    "Comet",
    "Ember",
    "Spark",
    "River",
    "Lake",
    "Stone",
    "Maple",
    "Cedar",
    "Willow",
    "Dawn",
    "Dusk",
    "Pebble",
    "Lantern",
    "Harbor",
    "Meadow",
    "Orchard",
    "Quartz",
    "Velvet",
    "Zephyr",
    "Nectar",
    "Kettle",
    "Beacon",
    "Sparrow",
)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: The page's examples to click: Polish and infix, propositional and LTL, an unsatisfiable formula, in many names.
EXAMPLES = (
    "& Rain | Snow ! Wind",
    "Rain & (Snow | !Wind)",
    "| & alarm ! door & door light",
    "& Sunny ! Sunny",
    "U waiting granted",
    "request U (granted & X done)",
    "& G F tick G ! error",
    "& X busy X ! busy",
)
#: The renaming styles the page offers: other words, or other single letters.
RENAMING_STYLES = ("words", "letters")


def _parser(task: str) -> Callable[..., logic.Formula]:
    return logic.parse_prop if task == "prop" else logic.parse_ltl


# ---------------------------------------------------------------------------------------------------
# Renaming
# ---------------------------------------------------------------------------------------------------
def random_renaming(
    names: Sequence[str], rng: random.Random, style: str = "words", letters: str = LETTERS
) -> dict[str, str]:
    """A random one-to-one renaming of ``names`` to other names: words (``RENAMING_WORDS``, numbered where the
    formula has more symbols than there are words) or single letters drawn from ``letters`` (a fixed-embedding
    model has rows for its first few letters only). Names are moved to names the formula does not use where there
    are enough; the result is never the identity when another renaming exists."""
    if style not in RENAMING_STYLES:
        raise ValueError(f"unknown renaming style {style!r}; choose one of {', '.join(RENAMING_STYLES)}")
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    if style == "words":
        pool = [word for word in RENAMING_WORDS if word not in names]
        number = 2
        while len(pool) < len(names):
            pool += [f"{word}{number}" for word in RENAMING_WORDS if f"{word}{number}" not in names]
            number += 1
    else:
        pool = list(dict.fromkeys(letters))
        if len(pool) < len(names):
            raise InputError(
                f"the formula has {len(names)} symbols, more than the {len(pool)} letters to rename them to; "
                "rename to words instead"
            )
        unused = [letter for letter in pool if letter not in names]
        # Prefer letters the formula does not use, so that every name visibly changes.
        pool = unused if len(unused) >= len(names) else pool
    for _ in range(100):
        chosen = rng.sample(pool, len(names))
        mapping = dict(zip(names, chosen))
        if any(old != new for old, new in mapping.items()):
            return mapping
    return mapping  # only the identity fits (one symbol, one letter)


def rename_text(text: str, mapping: Mapping[str, str], notation: str = "polish") -> str:
    """``text`` (a formula, a trace or an assignment) with its symbol names replaced by ``mapping``, keeping the
    user's spelling, operators and spacing. Text written without spaces gets spaces between its tokens where a new
    name is longer than one character (without spaces, ``&Cloudb`` would be read letter by letter)."""
    tokens = [token for token in tokenize(text, notation, _DEFAULT_RULE) if token.kind != "end"]
    segmented = any(ch.isspace() for ch in text)
    renamed = [mapping.get(token.value, token.value) if token.kind == "sym" else token.text for token in tokens]
    if not segmented:
        if all(len(name) == 1 for token, name in zip(tokens, renamed) if token.kind == "sym"):
            return "".join(renamed)
        if len(renamed) == 1:
            return renamed[0]  # one name alone: read_formula reads a lone word as a name
        # Whitespace makes every word a name; in infix, "!" and parentheses stay glued to what they enclose.
        out = renamed[0]
        for before, token, word in zip(tokens, tokens[1:], renamed[1:]):
            glued = notation == "infix" and (before.text in ("(", "!") or token.text == ")")
            out += word if glued else " " + word
        return out
    out: list[str] = []
    end = 0
    for token, new in zip(tokens, renamed):
        start = token.pos
        out.append(text[end:start])
        if token.kind == "sym" and new != token.text:
            # A name glued to a word character before or after it (infix ``Xa``) is kept apart by a space.
            if start > 0 and not text[start - 1].isspace() and _word_char(text[start - 1]):
                new = " " + new
            after = start + len(token.text)
            if after < len(text) and _word_char(text[after]):
                new = new + " "
        out.append(new)
        end = token.pos + len(token.text)
    out.append(text[end:])
    return "".join(out)


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_.'"


def rename_formula_text(read: ReadFormula, mapping: Mapping[str, str]) -> str:
    """The formula as the user typed it, renamed by ``mapping``; checked to read back as the renamed formula (else
    the renamed formula printed in the user's notation)."""
    expected = logic.rename_formula(read.formula, mapping)
    text = rename_text(read.source, mapping, read.notation)
    try:
        if _parser(read.task)(text, read.notation, _DEFAULT_RULE) == expected:
            return text
    except (logic.LogicSyntaxError, ValueError):
        pass
    return logic.format_formula(expected, read.notation, "file").strip()


def answer_tokens(text: str) -> list[tuple[str, str]] | None:
    """An answer (an assignment ``Rain 1 Wind 0``, a trace ``a;{1}``, or text that is neither) as its tokens, so
    that answers compare whatever their spacing; ``None`` where it does not even split into tokens."""
    try:
        return [(token.kind, token.value) for token in tokenize(text, "polish", _DEFAULT_RULE)]
    except logic.LogicSyntaxError:
        return None


def rename_answer(text: str, mapping: Mapping[str, str]) -> str:
    """An answer with its symbols renamed by ``mapping``, spaced as the model writes answers: without spaces when
    every token is one character (``a1b0``), else with single spaces (``Rain 1 Wind 0``). Text that does not split
    into tokens is returned as it is."""
    try:
        tokens = [token for token in tokenize(text, "polish", _DEFAULT_RULE) if token.kind != "end"]
    except logic.LogicSyntaxError:
        return text
    words = [mapping.get(token.value, token.value) if token.kind == "sym" else token.text for token in tokens]
    return "".join(words) if all(len(word) == 1 for word in words) else " ".join(words)


def same_answer(first: str, second: str) -> bool:
    """Whether two answers are the same tokens (``a1b0`` and ``a 1 b 0`` are; ``a1b0`` and ``b0a1`` are not: the
    order the model wrote is part of its answer)."""
    tokens = answer_tokens(first), answer_tokens(second)
    if tokens[0] is None or tokens[1] is None:
        return first.strip() == second.strip()
    return tokens[0] == tokens[1]


def readable_assignment(text: str) -> str | None:
    """``Rain 1 Wind 0`` as ``Rain = true, Wind = false``; ``None`` for text that is no assignment."""
    try:
        assignment = logic.parse_assignment(text, _DEFAULT_RULE)
    except (logic.LogicSyntaxError, ValueError):
        return None
    return ", ".join(f"{name} = {'true' if value else 'false'}" for name, value in assignment.items())


def describe_renaming(mapping: Mapping[str, str]) -> str:
    return ", ".join(f"{old} → {new}" for old, new in mapping.items())


# ---------------------------------------------------------------------------------------------------
# Model folders: what the page lists and shows
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelEntry:
    """A model the page offers: its label, its folder (``None``: the shipped model that fits each formula), its
    task (``None``: either), whether it has fixed symbol embeddings (a baseline that renaming can fool), and
    whether it ships with the package."""

    label: str
    folder: Path | None
    task: str | None
    fixed: bool = False
    shipped: bool = False


#: The label of the entry that answers with the shipped model that fits each formula.
AUTOMATIC = "automatic (shipped models)"


def read_config(folder: Path) -> dict:
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{folder}: cannot read its config.json ({error})") from None


def describe_folder(folder: str | Path, label: str | None = None) -> ModelEntry:
    """The entry of a saved model folder (or a training OUTPUT holding one); a ``ValueError`` names what the page
    cannot use: a missing folder, or a model of another task."""
    from ..utils.files import resolve_model_folder

    path = resolve_model_folder(str(folder))
    config = read_config(path)
    vocabulary = config.get("vocabulary")
    if vocabulary not in TASKS:
        raise ValueError(
            f"{folder}: a {config.get('model_type', 'unknown')} model for {vocabulary or 'an unknown task'}; the web "
            f"demo answers propositional and LTL models ({', '.join(TASKS)})"
        )
    # A training OUTPUT keeps its model in OUTPUT/model: the OUTPUT's name says which model it is.
    name = path.parent.name if path.name == "model" and path.parent.name else path.name
    return ModelEntry(label or name, path, vocabulary, fixed=config.get("embedding_type") == "fixed")


def model_entries(folders: Iterable[str | Path] = ()) -> list[ModelEntry]:
    """The page's models: the automatic choice, every shipped model, then ``folders`` (labelled by folder name,
    with the parent's name where two would be equal)."""
    from ..pretrained import SHIPPED, shipped_model

    entries = [ModelEntry(AUTOMATIC, None, None, shipped=True)]
    # The page answers formulas: the shipped models of other tasks (clutrr) answer through `symbolinv solve`.
    entries += [
        ModelEntry(name, shipped_model(name), task, shipped=True)
        for name, task in sorted(SHIPPED.items())
        if task in TASKS
    ]
    taken = {entry.label for entry in entries}
    for folder in folders:
        entry = describe_folder(folder)
        label = entry.label
        if label in taken:
            assert entry.folder is not None
            label = f"{entry.folder.parent.name}/{entry.folder.name}"
        number = 2
        while label in taken:
            label, number = f"{entry.label} ({number})", number + 1
        taken.add(label)
        entries.append(ModelEntry(label, entry.folder, entry.task, entry.fixed))
    return entries


def card_excerpt(folder: Path, limit: int = 1200) -> str:
    """The key figures of a model card (``README.md`` in the folder) as Markdown: its title and the first table of
    its Evaluation section (or that section's first paragraph, or the card's first paragraph where it has none)."""
    path = folder / "README.md"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return f"`{folder.name}` has no model card (README.md)."
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)  # the Hub metadata block
    lines = text.splitlines()
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), folder.name)
    section = _section(lines, "evaluation") or _section(lines, "results")
    table = _first_table(section)
    if table:
        body = "\n".join(table)
    else:
        body = _first_paragraph(section) or _first_paragraph(_after_title(lines))
        if len(body) > limit:
            body = body[:limit].rsplit(" ", 1)[0] + " …"
    return f"**{title}**\n\n{body}".strip()


def _section(lines: list[str], name: str) -> list[str]:
    start = next((i for i, line in enumerate(lines) if line.startswith("## ") and name in line.lower()), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1 : end]


def _after_title(lines: list[str]) -> list[str]:
    start = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start + 1 : end]


def _first_table(lines: list[str]) -> list[str]:
    table: list[str] = []
    for line in lines:
        if line.lstrip().startswith("|"):
            table.append(line.strip())
        elif table:
            break
    return table if len(table) >= 2 else []


def _first_paragraph(lines: list[str]) -> str:
    paragraph: list[str] = []
    in_code = False
    for line in lines:
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            break
    return " ".join(paragraph)


def heatmap_image(folder: Path) -> Path | None:
    """The accuracy heatmap of the model's evaluation in its folder (``heatmap-test.png`` first, as ``symbolinv
    evaluate`` writes it, then any ``heatmap*.png``), or ``None``."""
    preferred = folder / "heatmap-test.png"
    if preferred.is_file():
        return preferred
    found = sorted(folder.glob("heatmap*.png"))
    return found[0] if found else None
