"""Tree-to-tree datasets of the Differentiable Tree Machine / Differentiable Tree Experts family.

A reconstruction of the DTM paper's kinds of data (car/cdr selection, active/passive/logical-form sentence
transformations) from the grammar of :mod:`.sentences` and the word lists of this module, not the original data
(which :func:`dataset_builders.dtm.load_dtm` reads). Inputs and targets are bracketed binary trees
(:mod:`hf_symbolinv.utils.trees`; an empty child is ``_``), except ``nnf`` (propositional formulas in Polish notation,
:mod:`hf_symbolinv.tasks.nnf`).

Configurations (task ``tree``; ``nnf``: task ``nnf``):

* ``car-cdr-seq``: a sentence tree whose root label names 1..4 car/cdr operations in Lisp's way (car: the left
  child, cdr: the right child; ``CADR`` is the car of the cdr) -> the subtree they select:
  ``(CDAR (NP the dog) (VP chased (NP a cat)))`` -> ``(NP the dog)``'s right child ``dog``. As in the DTM papers'
  data, the operations are drawn alike in every split and the structural split changes the sentence near its
  leaves. Structural measure: the most adjectives of one noun phrase (train 0..2, structural 3..``max_size``).
* ``tree-reverse``: a random binary tree -> its mirror image (the children swapped at every node, an empty
  child included). Structural measure: the tree's depth (train 2..5, structural 6..``max_size``).
* ``active-logical``, ``passive-logical``: an active (passive) sentence -> its logical form;
  ``actpass-logical``: an active or a passive sentence (half each) -> its logical form; ``active-passive``:
  an active sentence -> its passive. Structural measure: the most adjectives of one noun phrase (train
  0..2, structural 3..``max_size``).
* ``nnf``: a propositional formula over 3..``num_symbols`` letters -> its negation normal form; every
  target is checked equivalent to its source by the logic engine. Structural measure: the formula's size
  (train 5..10, structural 11..``max_size``).

The grammar (binary trees; words in lower case, labels in upper case)::

    NP      = (NP DET NBAR)            NBAR = NOUN | (AP ADJ NBAR)        (one AP per adjective)
    VERB    = V | (ADVP ADV V)         PP   = (PP PREP NP)
    active  = (S NP_subj VP)           VP   = (VP VERB NP_obj) | (VP (VP VERB NP_obj) PP)
    passive = (S NP_obj VP)            VP   = (VP (PASS was VERB) (AGENT by NP_subj)), with the same PP
    logical = (LF PRED (ARGS NP_subj NP_obj))   PRED = VERB | (MOD VERB PP)

e.g. ``(S (NP the (AP big dog)) (VP chased (NP some cat)))`` -> ``(S (NP some cat) (VP (PASS was chased)
(AGENT by (NP the (AP big dog)))))`` -> ``(LF chased (ARGS (NP the (AP big dog)) (NP some cat)))``.

Splits of every configuration: ``train``, ``validation``, ``test`` (in distribution, 80/10/10 of ``num_samples``),
``test_ood_lexical`` (the training structures, every content word from a held-out pool that ``train`` and
``validation`` never use) and ``test_ood_structural`` (the training words, structural measure beyond training, up
to ``max_size``); each OOD split has as many rows as ``test``. Every split shares its rows equally among the values
of its structural measure. No input appears twice in a split or in two splits. Depth: the root has depth 0; no
input or target is deeper than ``max_depth`` (default 8, the DTE models' default; a deeper candidate is dropped and
counted). Content words (nouns, adjectives, verbs, adverbs; letters for ``nnf``) are symbols; ``num_symbols`` caps
the distinct symbols of one input.

Columns: ``input``, ``target``, ``num_symbols`` (distinct symbols of the input) and ``size`` (nodes of the
input tree: for ``nnf`` the formula's size).
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import datasets

from hf_symbolinv import logic
from hf_symbolinv.logic import Atom, Formula, Not
from hf_symbolinv.tasks.nnf import equivalent, format_nnf, formula_depth, is_nnf, to_nnf
from hf_symbolinv.tasks.trees import (
    AGENT_MARKER,
    CAR_CDR_MAX_OPERATIONS,
    CARCDR_LABELS,
    DETERMINERS,
    PASSIVE_AUX,
    PREPOSITIONS,
    is_tree_symbol,
)
from hf_symbolinv.utils.trees import (
    Tree,
    format_bracketed,
    mirror,
    parse_bracketed,
    tree_depth,
    tree_leaves,
    tree_nodes,
)

from .cards import card_metadata, markdown_table
from .generation import Outcome, default_chunk_size, derived_rng, equal_quotas, fingerprint_of, generate, split_counts
from .output import FEATURES, LETTERS, SPLIT_FRACTIONS, BuildDirectory, write_dataset
from .params import BuildOptions, BuildParams, ConfigSpec, checked_options, resolve_params
from .sentences import (
    ADVERB_CHANCE,
    PP_CHANCE,
    Pools,
    active_tree,
    logical_tree,
    passive_tree,
    random_clause,
    read_active,
    read_clause,
    read_passive,
)

__all__ = [
    "CONFIGS",
    "DEFAULT_MAX_DEPTH",
    "SPLITS",
    "build_trees",
    "check_row",
    "follow",
    "lisp_name",
    "lisp_operations",
    "mirror",
    "structure",
    "transform",
    "tree_depth",
    "word_pools",
]

DEFAULT_MAX_DEPTH = 8
#: The splits of every configuration, in order.
SPLITS = ("train", "validation", "test", "test_ood_lexical", "test_ood_structural")
#: The training values of each configuration's structural measure (the structural split goes beyond them).
TRAIN_STRUCTURE: dict[str, tuple[int, ...]] = {
    "car-cdr-seq": (0, 1, 2),
    "tree-reverse": (2, 3, 4, 5),
    "active-logical": (0, 1, 2),
    "passive-logical": (0, 1, 2),
    "actpass-logical": (0, 1, 2),
    "active-passive": (0, 1, 2),
    "nnf": (5, 6, 7, 8, 9, 10),
}
SENTENCE_CONFIGS = ("active-logical", "passive-logical", "actpass-logical", "active-passive")
#: Random trees (``tree-reverse``): the node labels, the chance that a node off the deepest path branches on,
#: and the chance that an inner node has one empty child.
RANDOM_TREE_LABELS = ("S", "NP", "VP", "PP", "AP")
BRANCH_CHANCE, UNARY_CHANCE = 0.35, 0.15
#: ``nnf``: the fewest distinct letters of a formula, the training letters (a..m; the held-out ones n..z)
#: and the connectives' weights (constants are never drawn).
NNF_MIN_SYMBOLS = 3
NNF_TRAIN_LETTERS = 13
NNF_PRIORITIES = {"not": 1.0, "and": 1.0, "or": 1.0, "equiv": 0.4, "xor": 0.4}
#: Candidates tried per row requested before a split gives up.
ATTEMPTS_PER_SAMPLE, ATTEMPTS_EXTRA = 30, 1000
#: Bumped whenever a change alters the rows drawn for a seed (2: car-cdr-seq as the DTM papers build it).
TREES_VERSION = 2

# ---------------------------------------------------------------------------------------------------
# Words: content words are symbols; every fourth word of each list is held out for test_ood_lexical
# ---------------------------------------------------------------------------------------------------
NOUNS = (
    "dog", "cat", "bird", "fox", "horse", "lion", "tiger", "bear", "wolf", "mouse", "rabbit", "duck", "goat",
    "sheep", "cow", "pig", "frog", "snake", "owl", "eagle", "child", "teacher", "doctor", "farmer", "baker",
    "pilot", "artist", "singer", "king", "queen", "boy", "girl", "man", "woman", "student", "lawyer", "nurse",
    "chef", "judge", "sailor",
)  # fmt: skip
ADJECTIVES = (
    "big", "small", "happy", "sad", "old", "young", "tall", "short", "quick", "slow", "brave", "calm", "clever",
    "gentle", "proud", "shy", "angry", "kind", "loud", "quiet", "bright", "dark", "red", "blue", "green",
    "yellow", "black", "white", "strong", "weak", "rich", "poor",
)  # fmt: skip
#: Regular verbs: the past tense is the participle, so the passive reuses the word.
VERBS = (
    "chased", "kicked", "helped", "watched", "followed", "pushed", "pulled", "greeted", "visited", "called",
    "thanked", "saved", "loved", "hated", "liked", "admired", "blamed", "praised", "warned", "trusted",
    "carried", "painted", "cleaned", "washed", "hugged", "kissed", "tickled", "rescued",
)  # fmt: skip
ADVERBS = (
    "quickly", "slowly", "happily", "sadly", "quietly", "loudly", "gently", "bravely", "calmly", "eagerly",
    "proudly", "rudely", "kindly", "boldly", "warmly", "softly",
)  # fmt: skip
HELD_OUT_EVERY = 4


def word_pools(words: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The training words and the held-out words (every fourth) of a list: disjoint, so that the lexical
    split shares no content word with training."""
    held = tuple(w for i, w in enumerate(words) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1)
    return tuple(w for w in words if w not in held), held


def pools(held_out: bool) -> Pools:
    """The training pools, or the held-out pools of ``test_ood_lexical``."""
    pick = 1 if held_out else 0
    letters = LETTERS[NNF_TRAIN_LETTERS:] if held_out else LETTERS[:NNF_TRAIN_LETTERS]
    return Pools(*(word_pools(words)[pick] for words in (NOUNS, ADJECTIVES, VERBS, ADVERBS)), letters)


OPERATIONS = {"CAR": 1, "CDR": 2}


def follow(tree: Tree, operations: Sequence[str]) -> Tree:
    """The subtree that ``operations`` (``CAR``: the left child, ``CDR``: the right one; first first) select;
    a ``ValueError`` where one reaches a leaf or an empty child."""
    for step, operation in enumerate(operations):
        if isinstance(tree, str) or tree is None:
            raise ValueError(f"operation {step + 1} ({operation}) applies to a leaf")
        child = tree[OPERATIONS[operation]]
        if child is None:
            raise ValueError(f"operation {step + 1} ({operation}) selects an empty child")
        tree = child
    return tree


def lisp_name(operations: Sequence[str]) -> str:
    """Lisp's name of ``operations`` applied first to last: ``["CDR", "CAR"]`` (cdr, then car) is ``CADR``."""
    return "C" + "".join("A" if operation == "CAR" else "D" for operation in reversed(operations)) + "R"


def lisp_operations(name: str) -> list[str]:
    """The operations a Lisp name applies, first first (the inverse of :func:`lisp_name`)."""
    if name not in CARCDR_LABELS:
        raise ValueError(f"{name!r} names no 1..{CAR_CDR_MAX_OPERATIONS} car/cdr operations (CAR, CDR, CADR, ...)")
    return ["CAR" if letter == "A" else "CDR" for letter in reversed(name[1:-1])]


def read_car_cdr(tree: Tree) -> tuple[list[str], Tree]:
    """The operations a ``car-cdr-seq`` input names and the sentence they apply to (its root labelled ``S``)."""
    if isinstance(tree, str) or tree is None:
        raise ValueError(f"{format_bracketed(tree)!r} is no car-cdr-seq input (a sentence under an operation name)")
    return lisp_operations(tree[0]), ("S", tree[1], tree[2])


def random_tree(rng: random.Random, depth: int, words: Sequence[str]) -> Tree:
    """A random binary tree of exactly ``depth`` (root 0): one path reaches it, the nodes off that path branch
    on with probability ``BRANCH_CHANCE``; an inner node has one empty child with probability ``UNARY_CHANCE``
    (never on the deepest path's side). Labels from ``RANDOM_TREE_LABELS``, leaves from ``words``."""

    def free(left: int) -> Tree:
        if left == 0 or rng.random() >= BRANCH_CHANCE:
            return rng.choice(words)
        children: list[Tree | None] = [free(left - 1), free(left - 1)]
        if rng.random() < UNARY_CHANCE:
            children[rng.randrange(2)] = None
        return (rng.choice(RANDOM_TREE_LABELS), children[0], children[1])

    def reach(left: int) -> Tree:
        if left == 0:
            return rng.choice(words)
        deep = rng.randrange(2)
        children: list[Tree | None] = [None, None]
        children[deep] = reach(left - 1)
        children[1 - deep] = None if rng.random() < UNARY_CHANCE else free(left - 1)
        return (rng.choice(RANDOM_TREE_LABELS), children[0], children[1])

    return reach(depth)


def _relabel(formula: Formula, names: list[str]) -> Formula:
    """``formula`` with its leaves named by ``names`` in turn (left to right)."""
    if isinstance(formula, Atom):
        return Atom(names.pop(0))
    if isinstance(formula, Not):
        return Not(_relabel(formula.arg, names))
    left = _relabel(formula.children[0], names)
    return type(formula)(left, _relabel(formula.children[1], names))


def random_nnf_source(rng: random.Random, size: int, letters: str, most_symbols: int) -> Formula | None:
    """A random formula of ``size`` (connectives weighted by ``NNF_PRIORITIES``) over s distinct letters, s
    uniform in ``NNF_MIN_SYMBOLS``..``most_symbols`` (and at most its leaves): the shape is drawn first, then s
    letters are spread over its leaves so that each occurs. None where the shape has too few leaves."""
    shape = logic.random_prop_formula(rng, size, ["x"], NNF_PRIORITIES)
    leaves = sum(isinstance(node, Atom) for node in shape.walk())
    if leaves < NNF_MIN_SYMBOLS:
        return None
    chosen = rng.sample(letters, rng.randint(NNF_MIN_SYMBOLS, min(most_symbols, leaves)))
    names = chosen + [rng.choice(chosen) for _ in range(leaves - len(chosen))]
    rng.shuffle(names)
    return _relabel(shape, names)


def _paths(tree: Tree | None, depth: int, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The car/cdr paths of the nodes at ``depth`` below the root."""
    if tree is None:
        return []
    if depth == 0:
        return [prefix]
    if isinstance(tree, str):
        return []
    return _paths(tree[1], depth - 1, (*prefix, "CAR")) + _paths(tree[2], depth - 1, (*prefix, "CDR"))


# ---------------------------------------------------------------------------------------------------
# The transformations, read from the input alone (the build's check)
# ---------------------------------------------------------------------------------------------------
def transform(config: str, tree: Tree) -> Tree:
    """The target tree of an input tree of a tree configuration, recomputed from the input alone."""
    if config == "car-cdr-seq":
        operations, sentence = read_car_cdr(tree)
        return follow(sentence, operations)
    if config == "tree-reverse":
        out = mirror(tree)
        assert out is not None
        return out
    if config == "active-logical":
        return logical_tree(read_active(tree))
    if config == "passive-logical":
        return logical_tree(read_passive(tree))
    if config == "actpass-logical":
        return logical_tree(read_clause(tree))
    if config == "active-passive":
        return passive_tree(read_active(tree))
    raise ValueError(f"{config!r} is not a tree configuration of {', '.join(TRAIN_STRUCTURE)}")


def _structure_of(config: str, parsed: Any) -> int:
    if config == "nnf":
        return parsed.size
    if config == "car-cdr-seq":
        parsed = read_car_cdr(parsed)[1]
    elif config == "tree-reverse":
        return tree_depth(parsed)
    return max(len(phrase.adjectives) for phrase in read_clause(parsed).noun_phrases)


def structure(config: str, text: str) -> int:
    """The structural measure of an input (see the module docstring): what the structural split varies."""
    return _structure_of(config, logic.parse_prop(text) if config == "nnf" else parse_bracketed(text))


@dataclass(frozen=True)
class Measured:
    """What an input gives, recomputed from it alone: the target text, the depth of input and target (the
    deeper), the ``num_symbols`` and ``size`` columns and the structural measure."""

    target: str
    depth: int
    num_symbols: int
    size: int
    structure: int


def measure(config: str, text: str) -> Measured:
    """Recompute a row from its input alone (``nnf``: the target is checked in NNF and equivalent to the input
    by the logic engine); a ``ValueError`` where the input is not one of the configuration's."""
    if config == "nnf":
        formula = logic.parse_prop(text)
        answer = to_nnf(formula)
        if not (is_nnf(answer) and equivalent(formula, answer)):
            raise ValueError(f"the NNF of {text!r} fails the check")  # never seen
        depth = max(formula_depth(formula), formula_depth(answer))
        symbols = len(logic.symbols_of(formula))
        return Measured(format_nnf(answer), depth, symbols, formula.size, formula.size)
    tree = parse_bracketed(text)
    target = transform(config, tree)
    symbols = len({leaf for leaf in tree_leaves(tree) if is_tree_symbol(leaf)})
    depth = max(tree_depth(tree), tree_depth(target))
    return Measured(format_bracketed(target), depth, symbols, tree_nodes(tree), _structure_of(config, tree))


def check_row(config: str, row: dict[str, Any], max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """The target of a row's input, recomputed; ``ValueError`` unless it is the row's target, the
    ``num_symbols``/``size`` columns describe the input and input and target are within ``max_depth``.
    ``nnf``: the target must also be in NNF and equivalent to the input (checked by the logic engine)."""
    if config == "nnf":
        formula, answer = logic.parse_prop(row["input"]), logic.parse_prop(row["target"])
        if not (is_nnf(answer) and equivalent(formula, answer)):
            raise ValueError(f"{row['target']!r} is not a negation normal form of {row['input']!r}")
    measured = measure(config, row["input"])
    if measured.target != row["target"]:
        raise ValueError(f"{row['input']!r} gives {measured.target!r}, not {row['target']!r}")
    if (row["num_symbols"], row["size"]) != (measured.num_symbols, measured.size):
        raise ValueError(f"{row!r}: num_symbols and size should be {measured.num_symbols} and {measured.size}")
    if measured.depth > max_depth:
        raise ValueError(f"{row['input']!r}: depth {measured.depth} exceeds the maximum {max_depth}")
    return measured.target


# ---------------------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    """A drawn input and its target as the generator built them (text), or why none was drawn."""

    key: int
    input: str | None
    target: str | None
    drop: str | None = None


@dataclass
class TreeSource:
    """Rows of one split: structural measures in turn (``sizes``), words from the training or the held-out
    pools, a quota per measure."""

    config: str
    tag: str
    seed: int
    sizes: tuple[int, ...]
    held_out: bool
    max_depth: int
    num_symbols: int
    max_index: int | None = None
    keys_all_listed: bool = True
    inline: bool = True  # drawing is cheap: workers would only add start-up time
    batch_size: int = 256
    drop_reasons: tuple[str, ...] = ("too deep", "too many symbols", "check failed")

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> Candidate | None:
        k = self.sizes[index % len(self.sizes)]
        if full is not None and full(k):
            return None  # its quota is full: nothing to draw
        rng = derived_rng(self.seed, self.tag, index)
        words = pools(self.held_out)
        if self.config == "nnf":
            formula = random_nnf_source(rng, k, words.letters, self.num_symbols)
            if formula is None:
                return Candidate(k, None, None, "too few leaves")
            return Candidate(k, format_nnf(formula), format_nnf(to_nnf(formula)))
        if self.config == "tree-reverse":
            tree = random_tree(rng, k, words.content)
            return Candidate(k, format_bracketed(tree), format_bracketed(mirror(tree)))
        if self.config == "car-cdr-seq":
            clause = random_clause(rng, words, k)
            sentence = passive_tree(clause) if rng.random() < 0.5 else active_tree(clause)
            paths = _paths(sentence, rng.randint(1, CAR_CDR_MAX_OPERATIONS))
            if not paths:
                return Candidate(k, None, None, "sentence too shallow")
            path = rng.choice(paths)
            source = (lisp_name(path), sentence[1], sentence[2])
            return Candidate(k, format_bracketed(source), format_bracketed(follow(sentence, path)))
        clause = random_clause(rng, words, k)
        voice = "active" if self.config in ("active-logical", "active-passive") else "passive"
        if self.config == "actpass-logical":
            voice = rng.choice(("active", "passive"))
        source = active_tree(clause) if voice == "active" else passive_tree(clause)
        target = passive_tree(clause) if self.config == "active-passive" else logical_tree(clause)
        return Candidate(k, format_bracketed(source), format_bracketed(target))

    def key(self, candidate: Candidate) -> Hashable:
        return candidate.key

    def identity(self, candidate: Candidate) -> Hashable:
        return candidate.input

    def realise(self, candidate: Candidate) -> Outcome:
        if candidate.drop is not None or candidate.input is None:
            return Outcome(drop=candidate.drop or "dropped")
        try:
            measured = measure(self.config, candidate.input)  # the target again, from the input alone
        except ValueError:
            return Outcome(drop="check failed")  # never seen: the generator and the reading agree
        if measured.target != candidate.target or measured.structure != candidate.key:
            return Outcome(drop="check failed")
        if measured.depth > self.max_depth:
            return Outcome(drop="too deep")
        if measured.num_symbols > self.num_symbols:
            return Outcome(drop="too many symbols")
        return Outcome(
            row={
                "input": candidate.input,
                "target": candidate.target,
                "num_symbols": measured.num_symbols,
                "size": measured.size,
            }
        )


# ---------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------
_SENTENCE_NOTE = "A reconstruction of the DTM paper's data from this package's own grammar, not the original."
CONFIGS: dict[str, ConfigSpec] = {
    spec.name: spec
    for spec in (
        ConfigSpec(
            "car-cdr-seq",
            "trees",
            "base",
            "A sentence tree whose root names 1..4 car/cdr operations -> the subtree they select; up to 2 "
            "adjectives per noun phrase in training, more in the structural test (the operations alike in every "
            "split, as in the DTM papers' data). " + _SENTENCE_NOTE,
            10_000,
            24,
            4,
            min_size=0,
        ),
        ConfigSpec(
            "tree-reverse",
            "trees",
            "base",
            "A random binary tree -> its mirror image; depth 2..5 in training, deeper trees in the structural test.",
            10_000,
            24,
            8,
            min_size=2,
        ),
        ConfigSpec(
            "active-logical",
            "trees",
            "base",
            "An active sentence tree -> its logical form (predicate over arguments); up to 2 adjectives per noun "
            "phrase in training, more in the structural test. " + _SENTENCE_NOTE,
            10_000,
            24,
            4,
            min_size=0,
        ),
        ConfigSpec(
            "passive-logical",
            "trees",
            "base",
            "A passive sentence tree -> its logical form (predicate over arguments); up to 2 adjectives per noun "
            "phrase in training, more in the structural test. " + _SENTENCE_NOTE,
            10_000,
            24,
            4,
            min_size=0,
        ),
        ConfigSpec(
            "actpass-logical",
            "trees",
            "base",
            "An active or a passive sentence tree (half each) -> its logical form; up to 2 adjectives per noun "
            "phrase in training, more in the structural test. " + _SENTENCE_NOTE,
            10_000,
            24,
            4,
            min_size=0,
        ),
        ConfigSpec(
            "active-passive",
            "trees",
            "base",
            "An active sentence tree -> the same sentence in the passive (inserting `was` and `by`); up to 2 "
            "adjectives per noun phrase in training, more in the structural test. " + _SENTENCE_NOTE,
            10_000,
            24,
            4,
            min_size=0,
        ),
        ConfigSpec(
            "nnf",
            "trees",
            "base",
            "A propositional formula (Polish notation, 3..5 letters) -> its negation normal form over ! & |, "
            "checked equivalent by the logic engine; sizes 5..10 in training, larger in the structural test.",
            10_000,
            5,
            16,
            min_size=5,
        ),
    )
}

_STRUCTURE_NAMES = {
    "tree-reverse": "depth",
    "nnf": "formula size",
    **dict.fromkeys(("car-cdr-seq", *SENTENCE_CONFIGS), "most adjectives of a noun phrase"),
}


def split_sizes(total: int) -> dict[str, int]:
    """Rows per split: ``train``/``validation``/``test`` 80/10/10 of ``total`` (the test takes the rest), each
    OOD split as many as ``test``."""
    counts = split_counts(total, SPLIT_FRACTIONS)
    return {**counts, "test_ood_lexical": counts["test"], "test_ood_structural": counts["test"]}


def structure_ranges(config: str, max_size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The structural measures of the in-distribution splits and of ``test_ood_structural``."""
    train = TRAIN_STRUCTURE[config]
    return train, tuple(range(max(train) + 1, max_size + 1))


def _check(spec: ConfigSpec, params: BuildParams, max_depth: int) -> None:
    train, _ = structure_ranges(spec.name, params.max_size)
    if params.max_size <= max(train):
        raise ValueError(
            f"--max-size must exceed the training maximum {max(train)} ({_STRUCTURE_NAMES[spec.name]}) for "
            f"{spec.name}: the structural test goes beyond it; got {params.max_size}"
        )
    if not 1 <= max_depth <= 16:
        raise ValueError(f"max_depth must be between 1 and 16, got {max_depth}")
    needed = {"tree-reverse": params.max_size}.get(spec.name)
    if spec.name in (*SENTENCE_CONFIGS, "car-cdr-seq"):
        needed = params.max_size + 3  # the shallowest place of a noun phrase in a logical form (or passive)
        if params.max_size > len(pools(True).adjectives):
            raise ValueError(
                f"--max-size {params.max_size}: noun phrases of distinct adjectives need at most "
                f"{len(pools(True).adjectives)} (the held-out adjectives)"
            )
    if needed is not None and max_depth < needed:
        raise ValueError(
            f"max_depth {max_depth} leaves no room for the structural test of {spec.name} up to --max-size "
            f"{params.max_size} (depth {needed} needed); lower --max-size or raise max_depth"
        )
    if spec.name == "nnf":
        if not NNF_MIN_SYMBOLS <= params.num_symbols <= len(LETTERS) - NNF_TRAIN_LETTERS:
            raise ValueError(
                f"--num-symbols (letters per formula) must be between {NNF_MIN_SYMBOLS} and "
                f"{len(LETTERS) - NNF_TRAIN_LETTERS} for nnf, got {params.num_symbols}"
            )
    elif params.num_symbols < 8:
        raise ValueError(f"--num-symbols (symbols per input) must be at least 8 for {spec.name}")


# ---------------------------------------------------------------------------------------------------
# The card
# ---------------------------------------------------------------------------------------------------
_FIELDS = {
    "input": "the input: a bracketed binary tree (nnf: a formula in Polish notation, tokens spaced)",
    "target": "the target, recomputed from the input when built",
    "num_symbols": "distinct symbols (content words; nnf: letters) of the input",
    "size": "nodes of the input tree (nnf: the formula's size)",
}

_FORMATS = {
    "car-cdr-seq": "An active or a passive sentence of the grammar below whose root label, instead of `S`, is "
    f"Lisp's name of 1..{CAR_CDR_MAX_OPERATIONS} car/cdr operations (`CAR`: the left child, `CDR`: the right "
    "child; the letters between C and R, read right to left, apply in turn: `CADR` is the car of the cdr). The "
    "target is the subtree they select (a leaf is a one-word tree). The operations are drawn alike in every "
    "split (a count uniform in 1..4, then a path of that length): the structural split changes the sentence "
    "near its leaves only (more adjectives), as in the DTM papers' data.",
    "tree-reverse": "A random binary tree: one path reaches the tree's depth, nodes off it branch on with "
    f"probability {BRANCH_CHANCE}, an inner node has one empty child (`_`) with probability {UNARY_CHANCE}; "
    f"labels from {', '.join(RANDOM_TREE_LABELS)}, leaves content words. The target swaps the two children "
    "of every node (an empty child included).",
    "active-logical": "An active sentence of the grammar below -> its logical form.",
    "passive-logical": "A passive sentence of the grammar below -> its logical form.",
    "actpass-logical": "An active or a passive sentence of the grammar below (each with probability 1/2) -> its "
    "logical form (the same for both voices of one clause).",
    "active-passive": "An active sentence of the grammar below -> the passive of the same clause: the object "
    "becomes the subject, `was` goes before the verb, the old subject follows `by` in an AGENT phrase; adverb "
    "and PP stay.",
    "nnf": "Polish notation with the propositional model spellings (`! & | = ^`; `=` equivalence, `^` xor), "
    "tokens separated by spaces; symbols are single letters. The target is the negation normal form over "
    "`! & |` only: De Morgan pushes negations to the atoms, a double negation cancels, `= x y` becomes "
    "`| & x y & ! x ! y` and `^ x y` becomes `| & x ! y & ! x y`. Every target is checked with the logic "
    "engine: in NNF, and equivalent to its input (the equivalence of both is valid).",
}
_GRAMMAR = (
    "Sentences (binary trees; words in lower case, labels in upper case):\n\n"
    "```\nNP      = (NP DET NBAR)            NBAR = NOUN | (AP ADJ NBAR)   (one AP per adjective)\n"
    "VERB    = V | (ADVP ADV V)         PP   = (PP PREP NP)\n"
    "active  = (S NP_subj VP)           VP   = (VP VERB NP_obj) | (VP (VP VERB NP_obj) PP)\n"
    "passive = (S NP_obj VP)            VP   = (VP (PASS was VERB) (AGENT by NP_subj)), with the same PP\n"
    "logical = (LF PRED (ARGS NP_subj NP_obj))   PRED = VERB | (MOD VERB PP)\n```\n\n"
    f"A sentence has a PP with probability {PP_CHANCE} and an adverb with probability {ADVERB_CHANCE}; its "
    "noun phrases have different nouns, a noun phrase different adjectives. Function words (not symbols): "
    f"determiners {', '.join(DETERMINERS)}; prepositions {', '.join(PREPOSITIONS)}; `{PASSIVE_AUX}` and "
    f"`{AGENT_MARKER}`, which the passive inserts."
)


def _card(spec: ConfigSpec, params: BuildParams, max_depth: int, dataset: datasets.DatasetDict, drops: Counter) -> str:
    name = spec.name
    train_sizes, structural = structure_ranges(name, params.max_size)
    measure_name = _STRUCTURE_NAMES[name]
    train_words, held_words = pools(False), pools(True)
    if name == "nnf":
        lexical = f"letters {train_words.letters[0]}..{train_words.letters[-1]} in training, " + (
            f"{held_words.letters[0]}..{held_words.letters[-1]} in `test_ood_lexical`"
        )
        symbols = f"Formulas have {NNF_MIN_SYMBOLS}..{params.num_symbols} distinct letters"
    else:
        lexical = (
            f"{len(train_words.content)} content words in training, {len(held_words.content)} held out for "
            "`test_ood_lexical` (every fourth word of each list)"
        )
        symbols = f"Inputs have at most {params.num_symbols} distinct symbols"
    sentence_like = name in SENTENCE_CONFIGS or name == "car-cdr-seq"
    counted = {split_name: Counter(structure(name, r) for r in split["input"]) for split_name, split in dataset.items()}
    values = sorted({v for counts in counted.values() for v in counts})
    by_measure = markdown_table(
        ["split", *(f"{measure_name} {v}" for v in values)],
        [(split_name, *(counts.get(v, 0) for v in values)) for split_name, counts in counted.items()],
    )
    example = dataset[next(iter(dataset))][0]
    default_depth = max_depth == DEFAULT_MAX_DEPTH
    command = (
        f"symbolinv data build {name} --out DIR --num-samples {params.num_samples} --num-symbols "
        f"{params.num_symbols} --max-size {params.max_size} --seed {params.seed}"
        if default_depth
        else f"dataset_builders.build({name!r}, DIR, BuildOptions(num_samples={params.num_samples}, num_symbols="
        f"{params.num_symbols}, max_size={params.max_size}, max_depth={max_depth}, seed={params.seed}))"
    )
    words = (
        ""
        if name == "nnf"
        else "## Words\n\nContent words (symbols), training / held out:\n\n"
        + markdown_table(
            ["kind", "training", "held out"],
            [
                (kind, ", ".join(getattr(train_words, kind)), ", ".join(getattr(held_words, kind)))
                for kind in ("nouns", "adjectives", "verbs", "adverbs")
            ],
        )
        + "\n"
    )
    task = "nnf" if name == "nnf" else "tree"
    metric = (
        "correct iff the answer is in NNF and equivalent to the input, exact iff it is the reference"
        if name == "nnf"
        else "exact match of the target tree (a prediction that does not parse is invalid)"
    )
    return "\n".join(
        [
            card_metadata(dataset, FEATURES, f"symbolinv {name}", ["symbolinv", "trees", "dtm", "synthetic"]),
            f"# {name}\n\n{spec.description}\n",
            "Built locally by `hf_symbolinv` (package `dataset_builders`) for tree-to-tree models (Differentiable "
            "Tree Machine / Differentiable Tree Experts)"
            + (
                ". **This is a reconstruction of the DTM paper's data, not the original**: the grammar, the "
                "encoding and the words are this package's own (`dataset_builders.load_dtm` reads the original "
                "files)."
                if sentence_like
                else "."
            )
            + f" Task `{task}`: {metric}.\n",
            "## Loading\n\n```python\nfrom datasets import load_dataset\n\n"
            'dataset = load_dataset("path/to/this/directory")  # or load_dataset(REPO_ID, name=CONFIG)\n```\n',
            "## Format\n\n"
            + _FORMATS[name]
            + "\n\n"
            + (_GRAMMAR + "\n\n" if sentence_like else "")
            + f"Example: input `{example['input']}`, target `{example['target']}`.\n",
            "## Fields\n\n"
            + markdown_table(["field", "type", "meaning"], [(n, f.dtype, _FIELDS[n]) for n, f in FEATURES.items()])
            + "\n",
            "## Splits\n\n" + markdown_table(["split", "samples"], [(n, len(s)) for n, s in dataset.items()]) + "\n",
            "## How it was generated\n\n"
            f"`train`, `validation` and `test` ({params.num_samples} rows, 80/10/10) and `test_ood_lexical` have "
            f"{measure_name} {', '.join(map(str, train_sizes))}; `test_ood_structural` has {measure_name} "
            f"{', '.join(map(str, structural))}, beyond training. Words: {lexical}, so no word of "
            "`test_ood_lexical` occurs in `train` or `validation`; the other splits use the training words. Each "
            f"split shares its rows equally among its values of the {measure_name}. {symbols}. No input appears twice "
            "in a split or in two splits.\n\n"
            f"Depth: the root has depth 0; no input or target is deeper than {max_depth}. Every target is "
            "recomputed from its input alone (the trees read back and transformed again) before a row is kept "
            f"(candidates dropped: {', '.join(f'{r} {n}' for r, n in sorted(drops.items())) or 'none'}).\n",
            words,
            f"## Statistics\n\nRows by {measure_name}:\n\n{by_measure}\n",
            f"## Reproducibility\n\nOne random stream per candidate (seed {params.seed}), so the result depends only "
            f"on the parameters, not on the machine. Rebuild with `{command}`.\n",
        ]
    )


# ---------------------------------------------------------------------------------------------------
# The build
# ---------------------------------------------------------------------------------------------------
def build_trees(
    config: str = "car-cdr-seq", out_dir: str | os.PathLike | None = None, options: BuildOptions | None = None
) -> datasets.DatasetDict:
    """Build a tree configuration as ``options`` ask (default: its parameters) and return it as a ``DatasetDict``.

    ``num_samples``: rows of ``train``/``validation``/``test`` together (each OOD split has as many as
    ``test``); ``num_symbols``: the most distinct symbols of one input (``nnf``: letters per formula);
    ``max_size``: the largest structural measure of ``test_ood_structural``; ``max_depth``: the deepest node of
    any input or target (root 0; default 8). ``workers`` is accepted for the common interface: drawing is cheap
    and runs in this process. With ``out_dir`` the dataset is written there too; a dataset of other parameters
    already there is replaced only with ``options.overwrite``.
    """
    options = checked_options(options)
    if config not in CONFIGS:
        raise ValueError(f"unknown tree configuration {config!r}; choose one of {', '.join(CONFIGS)}")
    spec = CONFIGS[config]
    options.refuse_unused(config, ("max_depth",))
    params = resolve_params(spec, options)
    depth = DEFAULT_MAX_DEPTH if options.max_depth is None else options.max_depth
    _check(spec, params, depth)
    train_sizes, structural = structure_ranges(config, params.max_size)
    counts = split_sizes(params.num_samples)
    plan = {
        "train": (train_sizes, False),
        "validation": (train_sizes, False),
        "test": (train_sizes, False),
        "test_ood_lexical": (train_sizes, True),
        "test_ood_structural": (structural, False),
    }
    info = {"config": spec.name, "family": "trees", "trees": TREES_VERSION, "max_depth": depth, **params.as_dict()}
    info["fingerprint"] = fingerprint_of(info)
    with BuildDirectory(out_dir, info, overwrite=options.overwrite) as directory:
        if directory.built is not None:
            return directory.built
        splits: dict[str, list[dict]] = {}
        drops: Counter[str] = Counter()
        done = 0
        on_accept = options.on_accept  # called with the count over all splits
        for name, (sizes, held_out) in plan.items():
            total = counts[name]
            if total == 0:
                splits[name] = []
                continue
            exclude = [row["input"] for rows in splits.values() for row in rows]
            source = TreeSource(
                config,
                f"{spec.name}/{name}",
                params.seed,
                sizes,
                held_out,
                depth,
                params.num_symbols,
                max_index=ATTEMPTS_PER_SAMPLE * total + ATTEMPTS_EXTRA,
            )
            rows, state = generate(
                source,
                total,
                FEATURES,
                directory.part(f"{spec.name}-{name}"),
                info["fingerprint"],
                limits=equal_quotas(total, sizes),
                workers=1,
                # Drawing is fast: commit less often.
                chunk_size=options.chunk_size or max(1000, default_chunk_size(total)),
                description=f"{spec.name} {name}",
                on_accept=None if on_accept is None else (lambda n, offset=done: on_accept(offset + n)),
                unique="input",
                exclude=exclude,
                progress=options.progress,
            )
            drops.update(state.drops)
            done += len(rows)
            derived_rng(params.seed, "shuffle", name).shuffle(rows)
            splits[name] = rows
        info["splits"] = {name: len(rows) for name, rows in splits.items() if rows}
        return write_dataset(
            directory.path, splits, FEATURES, lambda dataset: _card(spec, params, depth, dataset, drops), info
        )
