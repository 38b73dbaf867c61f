"""What the web demo computes, without Gradio: reading a formula typed in either notation, a family story (CLUTRR)
or a bracketed tree, renaming its symbols (a story's people), comparing answers up to a renaming, and what the page
shows of a model folder (its card's figures, its heatmap).

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
#: The page's stories to click (CLUTRR, answered by the shipped ``clutrr`` model): the text form and the symbolic form.
STORY_EXAMPLES = (
    "[Ann] is the mother of [Bo]. [Cy] is the brother of [Ann]. ? [Bo] [Cy]",
    "a father b , b sister c ? a c",
)
#: The page's trees to click (answered by the shipped ``active-logical`` model): an active sentence, a logical form.
TREE_EXAMPLES = (
    "(S (NP (DET the) (AP (N dog))) (VP (V saw) (NP (DET a) (AP (N cat)))))",
    "( LF ( V saw ) ( ARGS ( NP ( DET the ) ( AP ( N dog ) ) ) ( NP ( DET a ) ( AP ( N cat ) ) ) ) )",
)
#: The renaming styles the page offers: other words, or other single letters.
RENAMING_STYLES = ("words", "letters")
#: What a model reads, and so how the page reads what is typed for it.
FORMULA, STORY, TREE = "formula", "story", "tree"
#: The story task (its models answer a story with a relation word) and the shipped model of each kind that the
#: automatic choice answers stories and trees with (formulas get the shipped model that fits them, by its tables).
STORY_TASK = "clutrr"
SHIPPED_FOR_KIND = {STORY: "clutrr", TREE: "active-logical"}
#: A formula operator character: text starting with "(" that holds one is a formula (whose error the page names),
#: not a tree, whose words and labels are letters, digits and hyphens.
_FORMULA_CHARACTER = re.compile(r"[&|!~<>=^]")
_WORD = re.compile(r"[a-z-]+")
_NAME_WORD = re.compile(r"\w[\w-]*")
_BRACKETED_NAME = re.compile(r"\[([^\[\]]+)\]")


def _parser(task: str) -> Callable[..., logic.Formula]:
    return logic.parse_prop if task == "prop" else logic.parse_ltl


# ---------------------------------------------------------------------------------------------------
# Stories and trees
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReadStory:
    """A family story as it was read (by the CLUTRR task's readers, as ``symbolinv solve`` reads it): the text
    typed, its form (``text``: ``[Ann] is the mother of [Bo].`` sentences; ``symbolic``: ``a mother b , ...``
    facts), the facts the model reads, and its people in order of first appearance, as typed."""

    source: str
    form: str
    facts: str
    names: tuple[str, ...]
    task: str = STORY_TASK


@dataclass(frozen=True)
class ReadTree:
    """A bracketed tree as typed (the tree model's reader reads it, and names what is wrong with it)."""

    source: str
    task: str | None = None


def input_kind(text: str) -> str:
    """What the automatic choice takes ``text`` for: a story where it has bracketed names, or a query ``?`` and a
    relation word or facts of three words each (``a fathr b ? a b``: the story reader names the bad fact); a tree
    where it starts with ``(``, does not read as a formula and holds no formula operator character; else a formula
    (so that its reader names what is wrong)."""
    from ..tasks.clutrr import CLUTRR_RELATIONS

    source = text.strip()
    if _BRACKETED_NAME.search(source):
        return STORY
    body, mark, _ = source.partition("?")  # no formula has a "?"
    facts = [fact.split() for fact in body.split(",")]
    fact_shaped = all(len(fact) == 3 and all(_NAME_WORD.fullmatch(word) for word in fact) for fact in facts)
    if mark and (fact_shaped or set(_WORD.findall(source)) & set(CLUTRR_RELATIONS)):
        return STORY
    if source.startswith("(") and not _FORMULA_CHARACTER.search(source):
        try:
            read_formula(source)
        except InputError:
            return TREE
    return FORMULA


def read_story_input(text: str) -> ReadStory:
    """Read a story in either form with the CLUTRR task's readers; an :class:`InputError` carries their message
    (the sentence or fact that is malformed, a missing query, ...)."""
    from ..tasks.clutrr import facts_of_text, story_people

    source = text.strip()
    if not source:
        raise InputError(f"type a story, e.g. {STORY_EXAMPLES[0]}  or  {STORY_EXAMPLES[1]}")
    if len(source) > MAX_INPUT_CHARS:
        raise InputError(f"the input has {len(source):,} characters; stories of at most {MAX_INPUT_CHARS:,} are read")
    try:
        if "[" in source:
            facts, names = facts_of_text(source)
            return ReadStory(source, "text", facts, tuple(names))
        return ReadStory(source, "symbolic", source, tuple(story_people(source)))  # reads it, or names what is wrong
    except ValueError as error:
        raise InputError(str(error)) from None


def read_tree_input(text: str) -> ReadTree:
    """A tree as typed; only its emptiness and length are checked here (the model's reader reads the rest)."""
    source = text.strip()
    if not source:
        raise InputError(f"type a bracketed tree, e.g. {TREE_EXAMPLES[0]}")
    if len(source) > MAX_INPUT_CHARS:
        raise InputError(f"the input has {len(source):,} characters; trees of at most {MAX_INPUT_CHARS:,} are read")
    return ReadTree(source)


def rename_story_text(read: ReadStory, mapping: Mapping[str, str]) -> str:
    """The story as typed with its people renamed by ``mapping`` (the bracketed names of the text form, the names of
    the symbolic form's facts and query), checked to read back with the renamed people in the same places."""
    if read.form == "text":
        text = _BRACKETED_NAME.sub(lambda match: f"[{mapping.get(match.group(1), match.group(1))}]", read.source)
    else:
        # Names are the words between the separators (`,` between facts, `?` before the query).
        text = re.sub(r"[^\s,?]+", lambda match: mapping.get(match.group(0), match.group(0)), read.source)
    renamed = read_story_input(text)
    if renamed.names != tuple(mapping.get(name, name) for name in read.names):
        raise InputError("renaming the people changed the story; choose other names")  # a new name reads otherwise
    return text


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
    """A model the page offers: its label, its folder (``None``: the shipped model that fits each input), its
    task (``None``: any), whether it has fixed symbol embeddings (a baseline that renaming can fool), whether it
    ships with the package, and what it reads (:data:`FORMULA`, :data:`STORY` or :data:`TREE`; ``None``: any, by
    :func:`input_kind`)."""

    label: str
    folder: Path | None
    task: str | None
    fixed: bool = False
    shipped: bool = False
    kind: str | None = FORMULA


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
    kind = folder_kind(path, config)
    if kind is None:
        raise ValueError(
            f"{folder}: a {config.get('model_type', 'unknown')} model for {vocabulary or 'an unknown task'}; the web "
            f"demo answers propositional and LTL models ({', '.join(TASKS)}), {STORY_TASK} story models and tree "
            "models"
        )
    # A training OUTPUT keeps its model in OUTPUT/model: the OUTPUT's name says which model it is.
    name = path.parent.name if path.name == "model" and path.parent.name else path.name
    return ModelEntry(label or name, path, vocabulary, fixed=config.get("embedding_type") == "fixed", kind=kind)


def folder_kind(folder: Path, config: Mapping | None = None) -> str | None:
    """What a saved model reads: formulas (a propositional or LTL model), stories (a CLUTRR model), trees (a model
    of the tree route, which ``symbolinv solve`` answers with that route); ``None`` for any other model."""
    config = config if config is not None else read_config(folder)
    vocabulary = config.get("vocabulary")
    if vocabulary in TASKS:
        return FORMULA
    if vocabulary == STORY_TASK:
        return STORY
    from ..models.registry import folder_route  # imports the model families (torch): only for other folders

    return TREE if folder_route(folder).name == "tree" else None


def model_entries(folders: Iterable[str | Path] = ()) -> list[ModelEntry]:
    """The page's models: the automatic choice, every shipped model, then ``folders`` (labelled by folder name,
    with the parent's name where two would be equal)."""
    from ..pretrained import SHIPPED, SHIPPED_TREES, shipped_model

    entries = [ModelEntry(AUTOMATIC, None, None, shipped=True, kind=None)]
    entries += [
        ModelEntry(name, shipped_model(name), task, shipped=True, kind=FORMULA if task in TASKS else STORY)
        for name, task in sorted(SHIPPED.items())
        if task in TASKS or task == STORY_TASK
    ]
    entries += [
        ModelEntry(name, shipped_model(name), task, shipped=True, kind=TREE)
        for name, task in sorted(SHIPPED_TREES.items())
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
        entries.append(ModelEntry(label, entry.folder, entry.task, entry.fixed, kind=entry.kind))
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
