"""Kinship (in the spirit of CLUTRR): a chain of family facts between interchangeable people -> the relation
of the first person to the last.

Written form (whitespace-separated tokens; people are symbols, relation words and ``,`` ``?`` are fixed)::

    a father b , b sister c ? a c        ->  aunt

A fact ``X REL Y`` reads "Y is X's REL"; facts are separated by ``,``; ``? X Z`` asks for the relation REL
with "Z is X's REL". The facts hold exactly one chain from X to Z (each fact starting with the person the
previous one ended with), written in any order and among facts that lead elsewhere (``b son d , a father b ,
b sister c ? a c`` asks the same as the story above: ``b son d`` is a distractor). Facts use the eight basic
words (father, mother, son, daughter, brother, sister, husband, wife); an answer is one of the
:data:`RELATION_WORDS`.

The answer is the left-to-right composition of the facts by :data:`COMPOSITION`: the relation of X to the
n-th person, composed with the next fact, gives the relation of X to the (n+1)-th. The table holds only
the compositions that are certain in any family of the kinship model: couples of a man and a woman,
married once, every child the child of one married couple (so siblings share both parents), everybody
in a chain a different person.

Plain Python: the dataset builder and the tokenizer's vocabulary use the same words (a test checks it).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from . import Judgement, Task, register_task

#: Relation kinds (genderless) and their words by the gender of the person they name (male, female).
KIND_WORDS: dict[str, tuple[str, str]] = {
    "parent": ("father", "mother"),
    "child": ("son", "daughter"),
    "spouse": ("husband", "wife"),
    "sibling": ("brother", "sister"),
    "grandparent": ("grandfather", "grandmother"),
    "grandchild": ("grandson", "granddaughter"),
    "pibling": ("uncle", "aunt"),  # a sibling of a parent, or the spouse of one
    "nibling": ("nephew", "niece"),  # a child of a sibling, or of a sibling of the spouse
    "parent-in-law": ("father-in-law", "mother-in-law"),  # a parent of the spouse
    "child-in-law": ("son-in-law", "daughter-in-law"),  # the spouse of a child
    "sibling-in-law": ("brother-in-law", "sister-in-law"),  # a sibling of the spouse, or the spouse of a sibling
}
#: The kinds a fact may state (one step in the family graph).
FACT_KINDS: tuple[str, ...] = ("parent", "child", "sibling", "spouse")
#: Every relation word, in a fixed order (the answers, and the vocabulary's relation tokens).
RELATION_WORDS: tuple[str, ...] = tuple(word for pair in KIND_WORDS.values() for word in pair)
#: The words a fact may use.
FACT_WORDS: tuple[str, ...] = tuple(word for kind in FACT_KINDS for word in KIND_WORDS[kind])
#: Word -> (kind, gender), gender ``M`` or ``F``.
WORD_KIND: dict[str, tuple[str, str]] = {
    word: (kind, gender) for kind, pair in KIND_WORDS.items() for word, gender in zip(pair, "MF")
}
FACT_SEPARATOR, QUERY_MARK = ",", "?"

#: (kind of X's relation to Y, kind of the fact "Z is Y's ...") -> kind of X's relation to Z, wherever that
#: is certain (Z != X). Missing pairs are uncertain (grandparent's child: parent or uncle) or outside the
#: relations named here (great-grandparent, cousin).
KIND_COMPOSITION: dict[tuple[str, str], str] = {
    ("parent", "parent"): "grandparent",
    ("parent", "child"): "sibling",  # siblings share both parents
    ("parent", "sibling"): "pibling",
    ("parent", "spouse"): "parent",  # the other parent: one marriage each
    ("child", "parent"): "spouse",  # the child's other parent
    ("child", "child"): "grandchild",
    ("child", "sibling"): "child",
    ("child", "spouse"): "child-in-law",
    ("spouse", "parent"): "parent-in-law",
    ("spouse", "child"): "child",  # a child's parents are one married couple
    ("spouse", "sibling"): "sibling-in-law",
    ("sibling", "parent"): "parent",
    ("sibling", "child"): "nibling",
    ("sibling", "sibling"): "sibling",
    ("sibling", "spouse"): "sibling-in-law",
    ("grandparent", "spouse"): "grandparent",
    ("grandchild", "sibling"): "grandchild",
    ("pibling", "spouse"): "pibling",  # the blood uncle's wife, or the aunt by marriage's husband
    ("nibling", "sibling"): "nibling",
    ("parent-in-law", "spouse"): "parent-in-law",
    ("child-in-law", "child"): "grandchild",
    ("child-in-law", "spouse"): "child",
    ("sibling-in-law", "child"): "nibling",  # a child of the spouse's sibling, or of the sibling
}

#: The composition table on words: (X's relation to Y, fact word for Z) -> X's relation to Z. The answer's
#: gender is Z's, which the fact's word gives. The left word (Y's gender) matters only for a spouse fact:
#: couples are a man and a woman, so "father's husband" is no family's and has no entry.
COMPOSITION: dict[tuple[str, str], str] = {
    (left, fact): KIND_WORDS[result][gender == "F"]
    for (left_kind, fact_kind), result in KIND_COMPOSITION.items()
    for left in KIND_WORDS[left_kind]
    for fact, (_, gender) in ((word, WORD_KIND[word]) for word in KIND_WORDS[fact_kind])
    if fact_kind != "spouse" or WORD_KIND[left][1] != gender
}


def compose(words: Sequence[str]) -> str | None:
    """X's relation to the last person of a chain of facts (their words, in order), or None where the
    table leaves a step undetermined."""
    if not words:
        return None
    relation: str | None = words[0]
    for word in words[1:]:
        relation = COMPOSITION.get((relation, word)) if relation is not None else None
    return relation


Fact = tuple[str, str, str]  # (X, REL, Y): "Y is X's REL"


def format_facts(facts: Sequence[Fact], query: tuple[str, str]) -> str:
    """The written story of ``facts`` in the order given and the query ``(X, Z)``."""
    if not facts:
        raise ValueError("a story needs at least one fact")
    written = f" {FACT_SEPARATOR} ".join(" ".join(fact) for fact in facts)
    return f"{written} {QUERY_MARK} {query[0]} {query[1]}"


def format_story(names: Sequence[str], words: Sequence[str]) -> str:
    """The written chain: ``names[i] words[i] names[i+1]`` for each fact in order, then the query of the ends."""
    if len(names) != len(words) + 1 or not words:
        raise ValueError(f"a chain of {len(words)} facts needs {len(words) + 1} names, got {len(names)}")
    return format_facts([(names[i], word, names[i + 1]) for i, word in enumerate(words)], (names[0], names[-1]))


def read_relation_story(
    text: str, fact_words: Collection[str], reserved_words: Collection[str], fact_word_kind: str
) -> tuple[list[Fact], tuple[str, str]]:
    """The facts (in written order) and the query ``(X, Z)`` of a story ``X REL Y , ... ? X Z`` whose relations are
    ``fact_words`` and whose names are no ``reserved_words`` (nor a separator); ``ValueError`` naming the fact or the
    query that is malformed (a fact's relation described as ``fact_word_kind``). Kinship and CLUTRR stories alike."""
    body, mark, query = text.partition(QUERY_MARK)
    if not mark:
        raise ValueError(f"no query ({QUERY_MARK!r}) in the story {text!r}")
    reserved = {*reserved_words, FACT_SEPARATOR, QUERY_MARK}
    facts: list[Fact] = []
    for number, fact in enumerate(body.split(FACT_SEPARATOR)):
        parts = fact.split()
        if len(parts) != 3 or parts[1] not in fact_words or parts[0] in reserved or parts[2] in reserved:
            raise ValueError(f"fact {number + 1} of {text!r} is not 'NAME RELATION NAME' with {fact_word_kind}")
        facts.append((parts[0], parts[1], parts[2]))
    asked = query.split()
    if len(asked) != 2 or asked[0] == asked[1] or reserved & set(asked):
        raise ValueError(f"the query of {text!r} is not '{QUERY_MARK} NAME NAME' with two different names")
    return facts, (asked[0], asked[1])


def people_named(facts: Sequence[Fact], query: tuple[str, str]) -> list[str]:
    """Everybody the facts and the query name, in order of first appearance."""
    return list(dict.fromkeys([name for x, _, y in facts for name in (x, y)] + list(query)))


def read_facts(text: str) -> tuple[list[Fact], tuple[str, str]]:
    """The facts (in written order) and the query ``(X, Z)`` of a written story; ``ValueError`` naming the fact
    or the query that is malformed."""
    return read_relation_story(text, FACT_WORDS, RELATION_WORDS, "a basic relation")


def story_people(text: str) -> list[str]:
    """Everybody a story names, in order of first appearance."""
    return people_named(*read_facts(text))


def parse_story(text: str) -> tuple[list[str], list[str]]:
    """The names (chain order) and fact words of the one chain of facts from the query's first person to its
    second; ``ValueError`` where the text is no story, or holds no such chain or more than one."""
    facts, query = read_facts(text)
    return chain_of_facts(facts, query, text)


def chain_of_facts(facts: Sequence[Fact], query: tuple[str, str], text: str) -> tuple[list[str], list[str]]:
    """The names (chain order) and fact words of the one chain of ``facts`` (each followed from its first person to
    its second) from the query's first person to its second; ``ValueError`` naming ``text`` where there is no such
    chain or more than one."""
    start, end = query
    chains: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
    # Depth-first over simple paths; a person is never visited twice on one path, so this ends.
    stack: list[tuple[tuple[str, ...], tuple[str, ...]]] = [((start,), ())]
    while stack:
        names, words = stack.pop()
        if names[-1] == end:
            chains.add((names, words))
            continue
        for x, word, y in facts:
            if x == names[-1] and y not in names:
                stack.append(((*names, y), (*words, word)))
    if not chains:
        raise ValueError(f"no chain of facts leads from {start!r} to {end!r} in {text!r}")
    if len(chains) > 1:
        raise ValueError(f"more than one chain of facts leads from {start!r} to {end!r} in {text!r}")
    names, words = chains.pop()
    return list(names), list(words)


def story_answer(text: str) -> str | None:
    """The relation a written story composes to (None where the table leaves it undetermined)."""
    return compose(parse_story(text)[1])


def judge(source: str, prediction: str, reference: str | None = None, timeout: float | None = None) -> Judgement:
    """Correct iff the predicted word (whitespace stripped) is the relation the story composes to; a word that
    is no relation is invalid. Where the table leaves the story undetermined the reference decides, and
    without one the verdict is unknown. A source that is not a story raises ``ValueError``."""
    answer = story_answer(source)
    expected = answer if answer is not None else reference
    word = prediction.strip()
    if word not in RELATION_WORDS:
        return Judgement(correct=False, exact=False, invalid=True)
    if expected is None:
        return Judgement(correct=False, exact=False, unknown=True)
    correct = word == expected
    return Judgement(correct=correct, exact=word == (reference.strip() if reference is not None else expected))


TASK = register_task(
    Task(
        name="kinship",
        vocabulary="kinship",
        description="kinship (a chain of family facts between interchangeable people -> the relation of the first "
        "to the last)",
        example="a father b , b sister c ? a c",
        intended_use="A controlled benchmark of relational reasoning and of generalisation to longer chains and to "
        "unseen names: the names are interchangeable symbols, the relation words are fixed.",
        judge=judge,
        input_size=lambda source: len(parse_story(source)[1]),
        symbol_names=lambda source: sorted(story_people(source)),
    )
)
