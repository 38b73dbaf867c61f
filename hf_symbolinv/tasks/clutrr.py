"""CLUTRR (Sinha et al., 2019): stories of family relations between people whose names do not matter -> the relation
of one person to another, read from a folder as the data set is released.

A released folder (e.g. ``data_089907f8``) holds CSV files, each a split named by its file stem (``1.2,1.3_train``,
``1.4_test``, ...). A row gives the story twice: as text with the people's names in brackets (``story``, with
``query`` naming the two people) and as a graph (``story_edges``: pairs of node numbers, ``edge_types``: one
relation word per edge, ``query_edge``, ``genders``: ``Name:gender`` per node in node order). An edge ``(i, j)`` of
type ``r`` says that node ``j`` is node ``i``'s ``r``; the answer (``target``) is node ``t``'s relation to node
``s`` for ``query_edge`` ``(s, t)``: a relation word of :data:`CLUTRR_RELATIONS`.

Two input forms, both with the people as interchangeable symbols (renaming them changes nothing in the answer):

* ``symbolic`` (the graph models' input, and what :func:`load_clutrr` gives by default): the kinship task's
  written form, ``X REL Y`` for each edge in the file's order, then the query::

      b grandson e , e brother h ? b h        ->  grandson

  The people are single letters drawn per story from the whole alphabet (by the row's ``id``, so a reread gives
  the same story) rather than its names: the symbol rule of the package's tokenizers, and a model with one
  embedding per name sees every letter in training. The ``genders`` need no fact of their own: each
  person's gender is the one its incoming edge's word says (a row where it is not is refused), and the answer's
  word is gendered by the last person's.
* ``text``: the story as released, names in brackets, then ``? [X] [Z]`` (the text models' input).

The answer is judged against the reference word: correct iff equal (a word that is no relation is invalid).

Plain Python (the reader uses the standard library's ``csv``; :func:`load_clutrr` alone imports ``datasets``).
"""

from __future__ import annotations

import ast
import csv
import hashlib
import os
import random
import re
import string
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from . import Judgement, Task, register_task
from .kinship import FACT_SEPARATOR, QUERY_MARK, RELATION_WORDS, WORD_KIND, people_named, read_relation_story

#: The relation words of CLUTRR's stories and answers: the kinship task's words (a test checks that the released
#: files use no other).
CLUTRR_RELATIONS: tuple[str, ...] = RELATION_WORDS
FORMS = ("symbolic", "text")
#: The columns a CLUTRR CSV file must have (the reader needs them).
REQUIRED_COLUMNS = ("id", "story", "query", "target", "story_edges", "edge_types", "query_edge", "genders")
#: The share of the training file held out as ``validation`` by :func:`read_clutrr_folder` (seeded by the row ids).
VALIDATION_SHARE = 0.1
#: Genders as the ``genders`` column writes them -> the gender letter of :data:`~.kinship.WORD_KIND`.
_GENDERS = {"male": "M", "female": "F"}


class ClutrrFormatError(ValueError):
    """A CLUTRR file or row that cannot be read; the message names the file and the row."""


def _literal(value: str, column: str, where: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        raise ClutrrFormatError(f"{where}: column {column!r} is not a Python literal: {value[:60]!r}") from None


def _people_letters(row_id: str, count: int) -> list[str]:
    """``count`` distinct letters for a story's people, drawn by its id (stable across processes and runs)."""
    if count > len(string.ascii_lowercase):
        raise ValueError(f"a story of {count} people: the symbolic form names at most 26")
    seed = int.from_bytes(hashlib.sha256(row_id.encode()).digest()[:8], "big")
    return random.Random(seed).sample(string.ascii_lowercase, count)


def clutrr_row(record: dict[str, str], form: str, where: str) -> dict[str, Any]:
    """One CSV row as a sample: ``input`` in ``form``, ``target`` (the relation word), ``k`` (the story's number of
    edges, CLUTRR's chain length), ``num_symbols`` (people), ``size`` (= ``k``) and ``id``; ``ClutrrFormatError``
    naming ``where`` when a column is missing or inconsistent."""
    if form not in FORMS:
        raise ValueError(f"form {form!r}: choose one of {', '.join(FORMS)}")
    missing = [column for column in REQUIRED_COLUMNS if record.get(column) is None]
    if missing:
        raise ClutrrFormatError(f"{where}: no {', '.join(repr(column) for column in missing)} column")
    target = record["target"].strip()
    if target not in CLUTRR_RELATIONS:
        raise ClutrrFormatError(f"{where}: target {target!r} is not a relation word")
    edges = _literal(record["story_edges"], "story_edges", where)
    words = _literal(record["edge_types"], "edge_types", where)
    query = _literal(record["query_edge"], "query_edge", where)
    genders = [part.split(":", 1) for part in record["genders"].split(",") if part.strip()]
    if not isinstance(edges, list) or not isinstance(words, list) or len(edges) != len(words) or not edges:
        raise ClutrrFormatError(f"{where}: story_edges and edge_types are not two lists of one length")
    if any(len(pair) != 2 or pair[1].strip() not in _GENDERS for pair in genders):
        raise ClutrrFormatError(f"{where}: genders {record['genders'][:60]!r} is not 'Name:male|female,...'")
    nodes = len(genders)
    for (i, j), word in zip(edges, words):
        if not (0 <= i < nodes and 0 <= j < nodes) or i == j:
            raise ClutrrFormatError(f"{where}: edge ({i}, {j}) names no two of the {nodes} people")
        if word not in CLUTRR_RELATIONS:
            raise ClutrrFormatError(f"{where}: edge type {word!r} is not a relation word")
        if WORD_KIND[word][1] != _GENDERS[genders[j][1].strip()]:
            raise ClutrrFormatError(f"{where}: edge ({i}, {j}) {word!r} but {genders[j][0]} is {genders[j][1]}")
    if not (isinstance(query, tuple) and len(query) == 2 and all(0 <= n < nodes for n in query)):
        raise ClutrrFormatError(f"{where}: query_edge {record['query_edge']!r} names no two of the {nodes} people")
    if form == "symbolic":
        letters = _people_letters(record["id"], nodes)
        written = f" {FACT_SEPARATOR} ".join(f"{letters[i]} {word} {letters[j]}" for (i, j), word in zip(edges, words))
        source = f"{written} {QUERY_MARK} {letters[query[0]]} {letters[query[1]]}"
    else:
        asked = _literal(record["query"], "query", where)
        if not (isinstance(asked, tuple) and len(asked) == 2):
            raise ClutrrFormatError(f"{where}: query {record['query']!r} is not two names")
        source = f"{' '.join(record['story'].split())} {QUERY_MARK} [{asked[0]}] [{asked[1]}]"
    return {"input": source, "target": target, "k": len(edges), "num_symbols": nodes, "size": len(edges)}


def read_clutrr_file(path: str | os.PathLike, form: str = "symbolic") -> list[dict[str, Any]]:
    """The samples of one CLUTRR CSV file (see :func:`clutrr_row`); ``ClutrrFormatError`` naming the file and the
    row of the first problem."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [column for column in REQUIRED_COLUMNS if column not in (reader.fieldnames or [])]
            if missing:
                raise ClutrrFormatError(f"{path}: not a CLUTRR file (no {', '.join(repr(c) for c in missing)} column)")
            rows = [
                {**clutrr_row(record, form, f"{path} row {number}"), "id": record["id"]}
                for number, record in enumerate(reader, start=2)  # row 1 is the header
            ]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ClutrrFormatError(f"{path}: cannot read it as a CSV file: {error}") from None
    if not rows:
        raise ClutrrFormatError(f"{path}: no rows")
    return rows


def clutrr_files(folder: str | os.PathLike) -> list[Path]:
    """The CLUTRR split files of ``folder`` (its ``*.csv`` files whose header names CLUTRR's columns)."""
    found = []
    for path in sorted(Path(folder).glob("*.csv")):
        try:
            with path.open(newline="", encoding="utf-8") as handle:
                header = next(csv.reader(handle), [])
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
        if all(column in header for column in REQUIRED_COLUMNS):
            found.append(path)
    return found


def is_clutrr_folder(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds CLUTRR split files."""
    return Path(folder).is_dir() and bool(clutrr_files(folder))


def split_name(path: Path) -> str:
    """A file's split name: its stem (``1.2,1.3_train``)."""
    return path.stem


def _held_out(row_id: str) -> bool:
    digest = hashlib.sha256(("validation:" + row_id).encode()).digest()
    return int.from_bytes(digest[:4], "big") < VALIDATION_SHARE * 2**32


def _k_of(name: str) -> int | None:
    """CLUTRR's test files are ``1.K_test``: the chain length ``K`` of a split's name, or None."""
    match = re.fullmatch(r"\d+\.(\d+)_test", name)
    return int(match.group(1)) if match else None


def read_clutrr_folder(folder: str | os.PathLike, form: str = "symbolic") -> dict[str, list[dict[str, Any]]]:
    """Every split of a released CLUTRR folder: one per CSV file, named by its stem, in the order of the chain
    lengths of the test files (``1.2_test`` .. ``1.10_test``). Where exactly one file's stem ends in ``_train``
    and no file is named ``train`` or ``validation``, its rows are also split into ``train`` and ``validation``
    (a held-out tenth, chosen by each row's id) for ``symbolinv train``: nothing is ever chosen on a test file."""
    files = clutrr_files(folder)
    if not Path(folder).is_dir() or not files:
        raise ClutrrFormatError(f"{folder}: no CLUTRR *.csv files (with columns {', '.join(REQUIRED_COLUMNS)})")
    files.sort(key=lambda path: (_k_of(split_name(path)) or 0, split_name(path)))
    splits = {split_name(path): read_clutrr_file(path, form) for path in files}
    training = [name for name in splits if name.endswith("_train")]
    if len(training) == 1 and not {"train", "validation"} & set(splits):
        rows = splits[training[0]]
        splits = {
            "train": [row for row in rows if not _held_out(row["id"])],
            "validation": [row for row in rows if _held_out(row["id"])],
            **splits,
        }
    return splits


def load_clutrr(folder: str | os.PathLike, form: str = "symbolic") -> Any:
    """A released CLUTRR folder as a ``datasets.DatasetDict`` (see :func:`read_clutrr_folder`), columns ``input``,
    ``target``, ``k``, ``num_symbols``, ``size``, ``id``."""
    import datasets

    return datasets.DatasetDict(
        {name: datasets.Dataset.from_list(rows) for name, rows in read_clutrr_folder(folder, form).items()}
    )


# A story in the text form as a person types it: `[Ann] is the mother of [Bo].` sentences, then a query.
_SENTENCE = re.compile(r"\[([^\[\]]+)\]\s+is\s+(?:the\s+)?([a-z-]+)\s+of\s+\[([^\[\]]+)\]")
_QUERY = re.compile(r"\?\s*\[([^\[\]]+)\]\s*\[([^\[\]]+)\]\s*$")


def facts_of_text(text: str) -> tuple[str, list[str]]:
    """A typed text story (sentences ``[A] is the REL of [B].``, then ``? [X] [Z]`` asking for Z's relation to X)
    in the symbolic form, and the names in the order of their letters (a, b, ...); ``ValueError`` naming what is
    not understood. Only this sentence pattern is read: the models answer the symbolic form."""
    query = _QUERY.search(text)
    if query is None:
        raise ValueError("a text story ends with its query '? [X] [Z]' (the relation of Z to X)")
    body = text[: query.start()]
    sentences = [part.strip() for part in re.split(r"(?<=[.!;])\s+|\.$", body.strip()) if part.strip(" .")]
    names: dict[str, str] = {}

    def letter(name: str) -> str:
        if name not in names:
            if len(names) == len(string.ascii_lowercase):
                raise ValueError("a story of more than 26 people")
            names[name] = string.ascii_lowercase[len(names)]
        return names[name]

    facts = []
    for sentence in sentences:
        match = _SENTENCE.fullmatch(sentence.rstrip(" .!;"))
        if match is None or match.group(2) not in CLUTRR_RELATIONS:
            raise ValueError(f"{sentence!r} is not '[A] is the RELATION of [B].' with a relation word")
        person, word, of = match.groups()
        facts.append(f"{letter(of)} {word} {letter(person)}")
    if not facts:
        raise ValueError("a text story needs at least one sentence '[A] is the RELATION of [B].'")
    if query.group(1) not in names or query.group(2) not in names or query.group(1) == query.group(2):
        raise ValueError("the query '? [X] [Z]' must name two different people of the story")
    symbolic = f" {FACT_SEPARATOR} ".join(facts) + f" {QUERY_MARK} {names[query.group(1)]} {names[query.group(2)]}"
    return symbolic, list(names)


def read_story(text: str) -> tuple[list[tuple[str, str, str]], tuple[str, str]]:
    """The facts and query of a story in the symbolic form (any relation word as a fact); ``ValueError`` naming
    what is malformed."""
    return read_relation_story(text, CLUTRR_RELATIONS, CLUTRR_RELATIONS, "a relation word")


def story_chain(text: str) -> list[str]:
    """The relation words, in chain order, of the chain of facts of a symbolic story from the query's first person
    to its second: the facts as written where they walk from one to the other (CLUTRR's symbolic stories write their
    chain in order, and a chain may pass a person twice), else the one chain the facts hold, each followed from its
    first person to its second; ``ValueError`` where the text is no story or holds no such chain or more than one."""
    from .kinship import chain_of_facts

    facts, query = read_story(text)
    walk = [facts[0][0]] + [y for _, _, y in facts]
    if walk[0] == query[0] and walk[-1] == query[1] and all(x == walk[i] for i, (x, _, _) in enumerate(facts)):
        return [word for _, word, _ in facts]
    return chain_of_facts(facts, query, text)[1]


def story_people(text: str) -> list[str]:
    """Everybody a symbolic story names, in order of first appearance."""
    return people_named(*read_story(text))


def judge(source: str, prediction: str, reference: str | None = None, timeout: float | None = None) -> Judgement:
    """Correct iff the predicted word is the reference relation; a word that is no relation is invalid. Without a
    reference (``solve``), a story whose facts use the eight basic words only is judged by the kinship task's
    composition table where it decides; any other is unknown (CLUTRR's answers are the data set's)."""
    if QUERY_MARK not in source:
        raise ValueError(f"no query ({QUERY_MARK!r}) in the story {source[:60]!r}")
    word = prediction.strip()
    if word not in CLUTRR_RELATIONS:
        return Judgement(correct=False, exact=False, invalid=True)
    if reference is None:
        from .kinship import story_answer

        try:
            reference = story_answer(facts_of_text(source)[0] if "[" in source else source)
        except ValueError:  # facts beyond the basic words, or no single chain: the table cannot say
            reference = None
    if reference is None:
        return Judgement(correct=False, exact=False, unknown=True)
    correct = word == reference.strip()
    return Judgement(correct=correct, exact=correct)


def _input_size(source: str) -> int:
    """The heatmap's length axis: the story's number of facts (CLUTRR's k) in the symbolic form, else its sentences."""
    try:
        return len(read_story(source)[0])
    except ValueError:
        return max(1, source.count("."))


def _symbol_names(source: str) -> list[str]:
    try:
        return sorted(story_people(source))
    except ValueError:
        return sorted(set(re.findall(r"\[([^\[\]]+)\]", source)))


def iter_relation_words(rows: Sequence[dict[str, Any]]) -> Iterator[str]:
    """Every relation word of symbolic samples (facts and answers): what a vocabulary must hold."""
    for row in rows:
        facts, _ = read_story(row["input"])
        yield from (word for _, word, _ in facts)
        yield row["target"]


TASK = register_task(
    Task(
        name="clutrr",
        vocabulary="clutrr",
        description="CLUTRR (family-relation stories between interchangeable people -> the relation of one person "
        "to another), read from a released CLUTRR folder",
        example="b grandson e , e brother h ? b h",
        intended_use="Checking relational reasoning and generalisation to longer chains on the released CLUTRR "
        "data: train on chains of k = 2, 3 relations, test on k = 2..10; the people are interchangeable symbols.",
        judge=judge,
        input_size=_input_size,
        symbol_names=_symbol_names,
        answer_budget=lambda source: 2,  # one relation word and the end of the sequence
    )
)

__all__ = [
    "CLUTRR_RELATIONS",
    "ClutrrFormatError",
    "clutrr_files",
    "clutrr_row",
    "facts_of_text",
    "is_clutrr_folder",
    "load_clutrr",
    "read_clutrr_file",
    "read_clutrr_folder",
    "read_story",
]
