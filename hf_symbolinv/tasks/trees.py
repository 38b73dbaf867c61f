"""Tree-to-tree transduction (the Differentiable Tree Machine / Tree Experts family): a bracketed binary tree ->
another bracketed binary tree.

Written form: :mod:`hf_symbolinv.utils.trees` (``(S (NP the dog) (VP chased (NP the cat)))``, an empty child ``_``).
The datasets (``car-cdr-seq``, ``tree-reverse``, the sentence transformations; :mod:`dataset_builders.trees`)
each apply one transformation; the task does not know which, so an answer is judged against the reference:
correct iff the predicted tree equals it (whitespace does not matter, the tree does).

Symbols: a leaf is an interchangeable symbol iff it is not a base label (:data:`TREE_BASE_LABELS`: the phrase
labels, the car/cdr markers and the function words a grammar or a transformation inserts) and fully matches
:data:`TREE_SYMBOL_PATTERN`; the base labels take precedence over the pattern (``the``, ``was`` and ``by``
match it but are not symbols). Internal labels are structure, never symbols.

Plain Python: the dataset builders and the tree tokenizer use the same labels.
"""

from __future__ import annotations

import itertools
import re

from ..utils.trees import parse_bracketed, tree_leaves, tree_nodes
from . import Judgement, Task, register_task

#: The phrase labels of the sentence grammar, of its logical forms and of the random trees.
PHRASE_LABELS: tuple[str, ...] = ("S", "NP", "VP", "AP", "PP", "ADVP", "PASS", "AGENT", "LF", "ARGS", "MOD")
#: The most car/cdr operations one ``car-cdr-seq`` input names.
CAR_CDR_MAX_OPERATIONS = 4
#: The root labels of ``car-cdr-seq``: Lisp's names of 1..4 car/cdr operations (``CADR`` is car of cdr: the
#: letters between C and R, read right to left, are the operations in the order they apply).
CARCDR_LABELS: tuple[str, ...] = tuple(
    "C" + "".join(letters) + "R"
    for count in range(1, CAR_CDR_MAX_OPERATIONS + 1)
    for letters in itertools.product("AD", repeat=count)
)
#: Function words of the sentence grammar (not symbols: a transformation keeps or inserts them by rule).
DETERMINERS: tuple[str, ...] = ("the", "some", "every", "no", "this", "that")
PREPOSITIONS: tuple[str, ...] = ("in", "on", "near", "with", "under", "behind")
#: The words the passive inserts: ``was`` before the verb, ``by`` before the agent.
PASSIVE_AUX, AGENT_MARKER = "was", "by"
FUNCTION_WORDS: tuple[str, ...] = (*DETERMINERS, *PREPOSITIONS, PASSIVE_AUX, AGENT_MARKER)
#: The part-of-speech labels of the DTM papers' released trees (``( NP ( DET the ) ( AP ( N dog ) ) )``), beside
#: their LF, ARGS, S, NP, VP and AP.
DTM_LABELS: tuple[str, ...] = ("DET", "ADJ", "N", "V")
#: Every label of the tree tasks that is not a symbol (new labels go last: a saved model's label ids stay).
TREE_BASE_LABELS: tuple[str, ...] = (*PHRASE_LABELS, *CARCDR_LABELS, *FUNCTION_WORDS, *DTM_LABELS)
#: What a symbol (a content word) fully matches, unless it is a base label: lowercase words, hyphenated ones too
#: (the DTM papers' ``polka-dotted``).
TREE_SYMBOL_PATTERN = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"

_BASE = frozenset(TREE_BASE_LABELS)
_SYMBOL = re.compile(TREE_SYMBOL_PATTERN)


def is_tree_symbol(label: str) -> bool:
    """Whether a leaf label is an interchangeable symbol: not a base label, and matching the pattern."""
    return label not in _BASE and _SYMBOL.fullmatch(label) is not None


def tree_symbol_names(tree_text: str) -> list[str]:
    """The distinct symbols of a bracketed tree in order of first appearance (left to right), as the tree
    tokenizer numbers them; a ``ValueError`` where the text is no tree."""
    return list(dict.fromkeys(leaf for leaf in tree_leaves(parse_bracketed(tree_text)) if is_tree_symbol(leaf)))


def judge(source: str, prediction: str, reference: str | None = None, timeout: float | None = None) -> Judgement:
    """Correct (and exact) iff the predicted tree equals the reference tree; a prediction that is no bracketed
    binary tree is invalid. Without a reference the verdict is unknown (the task does not know which
    transformation the dataset applies). A reference that is no tree raises ``ValueError``."""
    try:
        predicted = parse_bracketed(prediction, unary=True)
    except (ValueError, TypeError, RecursionError):
        return Judgement(correct=False, exact=False, invalid=True)
    if reference is None:
        return Judgement(correct=False, exact=False, unknown=True)
    # A node of one child (the DTM papers' files) is the node with an empty right child.
    same = predicted == parse_bracketed(reference, unary=True)
    return Judgement(correct=same, exact=same)


TASK = register_task(
    Task(
        name="tree",
        vocabulary="tree",
        description="tree-to-tree transduction (a bracketed binary tree -> another, e.g. car/cdr selection, mirror, "
        "active -> passive or logical form)",
        example="(S (NP the dog) (VP chased (NP the cat)))",
        intended_use="Research on neural tree transduction and compositional generalisation (tree models): "
        "content words are interchangeable symbols, phrase labels and function words are fixed.",
        judge=judge,
        input_size=lambda source: tree_nodes(parse_bracketed(source)),
        symbol_names=tree_symbol_names,
        symbol_pattern=TREE_SYMBOL_PATTERN,
    )
)
