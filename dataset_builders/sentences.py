"""The sentence grammar of the tree datasets (:mod:`.trees`): noun phrases, clauses, and their active, passive and
logical-form trees, written and read back (the build checks every target by reading its input).

The grammar (binary trees; words in lower case, labels in upper case) is given in :mod:`.trees`' docstring.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hf_symbolinv.tasks.trees import AGENT_MARKER, DETERMINERS, PASSIVE_AUX, PREPOSITIONS
from hf_symbolinv.utils.trees import Tree, format_bracketed

#: Training sentences have at most this many adjectives on one noun phrase (the structural split more).
TRAIN_MAX_ADJECTIVES = 2
#: Chances in a sentence: a prepositional phrase, an adverb.
PP_CHANCE, ADVERB_CHANCE = 0.5, 0.5


@dataclass(frozen=True)
class Pools:
    """The content words one split draws from, by part of speech."""

    nouns: tuple[str, ...]
    adjectives: tuple[str, ...]
    verbs: tuple[str, ...]
    adverbs: tuple[str, ...]
    letters: str

    @property
    def content(self) -> tuple[str, ...]:
        return (*self.nouns, *self.adjectives, *self.verbs, *self.adverbs)


@dataclass(frozen=True)
class NounPhrase:
    """A determiner, its adjectives (outermost first) and the noun."""

    det: str
    adjectives: tuple[str, ...]
    noun: str


@dataclass(frozen=True)
class Clause:
    """The content of a sentence: who did what to whom, how, and where (a PP: preposition and noun phrase)."""

    subject: NounPhrase
    verb: str
    adverb: str | None
    obj: NounPhrase
    pp: tuple[str, NounPhrase] | None

    @property
    def noun_phrases(self) -> tuple[NounPhrase, ...]:
        return (self.subject, self.obj) + ((self.pp[1],) if self.pp else ())


def np_tree(phrase: NounPhrase) -> Tree:
    """``(NP DET NBAR)``, one ``(AP ADJ NBAR)`` per adjective around the noun."""
    nbar: Tree = phrase.noun
    for adjective in reversed(phrase.adjectives):
        nbar = ("AP", adjective, nbar)
    return ("NP", phrase.det, nbar)


def _verb_tree(clause: Clause) -> Tree:
    return clause.verb if clause.adverb is None else ("ADVP", clause.adverb, clause.verb)


def _pp_tree(pp: tuple[str, NounPhrase]) -> Tree:
    return ("PP", pp[0], np_tree(pp[1]))


def active_tree(clause: Clause) -> Tree:
    """The active sentence: ``(S NP_subj (VP VERB NP_obj))``, the VP inside ``(VP VP PP)`` where there is a PP."""
    vp: Tree = ("VP", _verb_tree(clause), np_tree(clause.obj))
    if clause.pp is not None:
        vp = ("VP", vp, _pp_tree(clause.pp))
    return ("S", np_tree(clause.subject), vp)


def passive_tree(clause: Clause) -> Tree:
    """The passive sentence: ``(S NP_obj (VP (PASS was VERB) (AGENT by NP_subj)))``, with the PP as above."""
    vp: Tree = ("VP", ("PASS", PASSIVE_AUX, _verb_tree(clause)), ("AGENT", AGENT_MARKER, np_tree(clause.subject)))
    if clause.pp is not None:
        vp = ("VP", vp, _pp_tree(clause.pp))
    return ("S", np_tree(clause.obj), vp)


def logical_tree(clause: Clause) -> Tree:
    """The logical form: ``(LF PRED (ARGS NP_subj NP_obj))``, PRED the verb or ``(MOD VERB PP)``."""
    predicate = _verb_tree(clause) if clause.pp is None else ("MOD", _verb_tree(clause), _pp_tree(clause.pp))
    return ("LF", predicate, ("ARGS", np_tree(clause.subject), np_tree(clause.obj)))


def expect_node(tree: Tree | None, label: str) -> tuple[Any, Any]:
    if isinstance(tree, str) or tree is None or tree[0] != label:
        raise ValueError(f"expected a ({label} ...) node, found {format_bracketed(tree)!r}")
    return tree[1], tree[2]


def _word(tree: Tree | None, allowed: Sequence[str] | None = None) -> str:
    if not isinstance(tree, str) or (allowed is not None and tree not in allowed):
        raise ValueError(f"expected a word{'' if allowed is None else ' of ' + '/'.join(allowed)}, found {tree!r}")
    return tree


def read_np(tree: Tree | None) -> NounPhrase:
    det, nbar = expect_node(tree, "NP")
    adjectives = []
    while not isinstance(nbar, str):
        adjective, nbar = expect_node(nbar, "AP")
        adjectives.append(_word(adjective))
    return NounPhrase(_word(det, DETERMINERS), tuple(adjectives), _word(nbar))


def _read_verb(tree: Tree | None) -> tuple[str, str | None]:
    if isinstance(tree, str):
        return tree, None
    adverb, verb = expect_node(tree, "ADVP")
    return _word(verb), _word(adverb)


def _split_pp(vp: Tree | None) -> tuple[Tree | None, tuple[str, NounPhrase] | None]:
    """The core VP and the PP of a VP (``(VP (VP ...) (PP ...))``), or the VP itself and None."""
    first, second = expect_node(vp, "VP")
    if isinstance(first, tuple) and first[0] == "VP":
        prep, phrase = expect_node(second, "PP")
        return first, (_word(prep, PREPOSITIONS), read_np(phrase))
    return vp, None


def read_active(tree: Tree) -> Clause:
    """The clause of an active sentence tree (a ``ValueError`` where it is not one)."""
    subject, vp = expect_node(tree, "S")
    core, pp = _split_pp(vp)
    verb, obj = expect_node(core, "VP")
    word, adverb = _read_verb(verb)
    return Clause(read_np(subject), word, adverb, read_np(obj), pp)


def read_passive(tree: Tree) -> Clause:
    """The clause of a passive sentence tree (a ``ValueError`` where it is not one)."""
    obj, vp = expect_node(tree, "S")
    core, pp = _split_pp(vp)
    passive, agent = expect_node(core, "VP")
    aux, verb = expect_node(passive, "PASS")
    marker, subject = expect_node(agent, "AGENT")
    _word(aux, (PASSIVE_AUX,))
    _word(marker, (AGENT_MARKER,))
    word, adverb = _read_verb(verb)
    return Clause(read_np(subject), word, adverb, read_np(obj), pp)


def _is_passive(tree: Tree) -> bool:
    try:
        read_passive(tree)
    except ValueError:
        return False
    return True


def read_clause(tree: Tree) -> Clause:
    """The clause of an active or a passive sentence tree."""
    return read_passive(tree) if _is_passive(tree) else read_active(tree)


def random_np(rng: random.Random, words: Pools, noun: str, adjectives: int) -> NounPhrase:
    """A noun phrase of ``noun`` with ``adjectives`` different adjectives and a random determiner."""
    return NounPhrase(rng.choice(DETERMINERS), tuple(rng.sample(words.adjectives, adjectives)), noun)


def random_clause(rng: random.Random, words: Pools, most_adjectives: int) -> Clause:
    """A clause whose longest noun phrase has exactly ``most_adjectives`` adjectives (one noun phrase drawn to
    have them; the others up to as many, at most the training maximum); different nouns for its noun phrases."""
    has_pp = rng.random() < PP_CHANCE
    count = 3 if has_pp else 2
    nouns = rng.sample(words.nouns, count)
    longest = rng.randrange(count)
    others = min(most_adjectives, TRAIN_MAX_ADJECTIVES)
    phrases = [
        random_np(rng, words, noun, most_adjectives if i == longest else rng.randint(0, others))
        for i, noun in enumerate(nouns)
    ]
    adverb = rng.choice(words.adverbs) if rng.random() < ADVERB_CHANCE else None
    pp = (rng.choice(PREPOSITIONS), phrases[2]) if has_pp else None
    return Clause(phrases[0], rng.choice(words.verbs), adverb, phrases[1], pp)
