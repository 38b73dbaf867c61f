"""Kinship stories (relational reasoning in the spirit of CLUTRR) with interchangeable names.

A story is a chain of k family facts between people named by single lowercase letters (symbols) and a
query of the chain's ends; the target is the relation of the first person to the last::

    input:  a father b , b sister c ? a c
    target: aunt

(``X REL Y`` reads "Y is X's REL"; the format, the relation words and the composition table are those of
:mod:`hf_symbolinv.tasks.kinship`.)

Each candidate draws a random family (:func:`random_family`: a founding couple, children, spouses who
marry in, over a few generations), then a chain of k basic facts (parent, child, sibling, spouse) through
k + 1 different people along which the composition table is determined at every step
(:func:`find_chain`). A story is kept only if its answer is certain twice: composing the chain's words
with the table gives a relation, and reading the family graph (:func:`graph_relation`) gives exactly one
relation between the two people, the same.

Configurations (defaults in :data:`CONFIGS`):

* ``kinship``: 100k stories split 80/10/10; ``train`` and ``validation`` have k in {2, 3}, ``test`` has k
  in 2..10 (``--max-size``), equal shares of every k in each split. Names: ``train`` and ``validation``
  draw from the first 13 letters (``--num-symbols``, a..m), ``test`` from the others (n..z), so the test
  shares no name with training. No story appears twice in a split, nor in both ``train`` and
  ``validation``.
* ``kinship-shuffled``: as ``kinship``, but each story adds :data:`DISTRACTORS` true facts that lead away from
  the chain (from a person of the chain to somebody outside it) and writes all its facts in a random order,
  so that the answer depends on who is who: the chain must be found by following the names from the query.
* ``kinship-test``: one ``test`` split of 1000 stories per k in 2..10 (``--num-samples`` per k), names
  from the test pool.

Columns: ``input`` (the story), ``target`` (the relation word), ``num_symbols`` (people in the story:
k + 1, and one more per distractor) and ``size`` (k, the facts of the chain).
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import datasets

from hf_symbolinv.tasks.kinship import (
    COMPOSITION,
    FACT_KINDS,
    KIND_COMPOSITION,
    KIND_WORDS,
    RELATION_WORDS,
    compose,
    format_facts,
    format_story,
    parse_story,
    story_people,
)

from .cards import card_metadata, markdown_table
from .generation import (
    Outcome,
    default_chunk_size,
    derived_rng,
    equal_quotas,
    fingerprint_of,
    generate,
    split_counts,
)
from .output import FEATURES, LETTERS, SPLIT_FRACTIONS, BuildDirectory, write_dataset
from .params import BuildOptions, BuildParams, ConfigSpec, checked_options, resolve_params

__all__ = [
    "CONFIGS",
    "TRAIN_SIZES",
    "Family",
    "Story",
    "build_kinship",
    "check_row",
    "find_chain",
    "graph_relation",
    "name_pools",
    "random_family",
    "relation_kinds",
]

#: Chain lengths of the training and validation stories.
TRAIN_SIZES = (2, 3)
#: The family model: generations below the founding couple, children per couple, chance to marry.
GENERATIONS, MAX_CHILDREN, MARRIAGE_CHANCE = 3, 5, 0.8
#: Node visits the search for one chain may make before the candidate is dropped.
SEARCH_BUDGET = 4000
#: Candidates tried per story requested before a split gives up (the stories of small k over a small
#: name pool can run out: no story appears twice).
ATTEMPTS_PER_SAMPLE, ATTEMPTS_EXTRA = 20, 1000
#: Facts off the chain in every ``kinship-shuffled`` story (the test pool of 13 names holds a chain of 10
#: facts and two more people).
DISTRACTORS = 2
#: Bumped whenever a change alters the stories drawn for a seed.
STORY_VERSION = 1


# ---------------------------------------------------------------------------------------------------
# The family graph
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Family:
    """People 0..n-1: their genders (``M``/``F``), parents ((father, mother) or None for the founders and
    those who married in), spouses (or None) and children."""

    gender: tuple[str, ...]
    parents: tuple[tuple[int, int] | None, ...]
    spouse: tuple[int | None, ...]
    children: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return len(self.gender)

    def siblings(self, person: int) -> tuple[int, ...]:
        couple = self.parents[person]
        if couple is None:
            return ()
        return tuple(other for other in self.children[couple[0]] if other != person)

    def spouses(self, person: int) -> tuple[int, ...]:
        spouse = self.spouse[person]
        return () if spouse is None else (spouse,)

    def parents_of(self, person: int) -> tuple[int, ...]:
        couple = self.parents[person]
        return () if couple is None else couple

    def neighbours(self, person: int) -> list[tuple[str, int]]:
        """The basic facts from ``person``: (word, other) for "other is person's word"."""
        out = []
        for kind, others in (
            ("parent", self.parents_of(person)),
            ("child", self.children[person]),
            ("sibling", self.siblings(person)),
            ("spouse", self.spouses(person)),
        ):
            out.extend((KIND_WORDS[kind][self.gender[other] == "F"], other) for other in others)
        return out


def random_family(rng: random.Random, generations: int = GENERATIONS, max_children: int = MAX_CHILDREN) -> Family:
    """A family drawn with ``rng``: a founding couple; every couple has 1..``max_children`` children; a child
    marries (someone from outside the family, of the other sex) with probability ``MARRIAGE_CHANCE`` and
    then has children in turn, for ``generations`` generations below the founders."""
    gender: list[str] = ["M", "F"]
    parents: list[tuple[int, int] | None] = [None, None]
    spouse: list[int | None] = [1, 0]
    children: list[list[int]] = [[], []]
    couples = [(0, 1, 0)]  # (father, mother, generation)
    for father, mother, generation in couples:  # grows while it is read: breadth first
        if generation >= generations:
            continue
        for _ in range(rng.randint(1, max_children)):
            child = len(gender)
            gender.append(rng.choice("MF"))
            parents.append((father, mother))
            spouse.append(None)
            children.append([])
            children[father].append(child)
            children[mother].append(child)
            if rng.random() < MARRIAGE_CHANCE:
                partner = len(gender)
                gender.append("F" if gender[child] == "M" else "M")
                parents.append(None)
                spouse.append(child)
                children.append([])
                spouse[child] = partner
                husband, wife = (child, partner) if gender[child] == "M" else (partner, child)
                couples.append((husband, wife, generation + 1))
    return Family(tuple(gender), tuple(parents), tuple(spouse), tuple(tuple(c) for c in children))


def relation_kinds(family: Family, x: int, z: int) -> set[str]:
    """Every relation kind that holds for "z is x's KIND", read from the graph by the definitions of
    :mod:`hf_symbolinv.tasks.kinship` (a well-formed pair has exactly one)."""
    if x == z:
        return set()

    def union(people: Sequence[int], step: Callable[[int], Sequence[int]]) -> set[int]:
        return {other for person in people for other in step(person)}

    parents, children = family.parents_of(x), family.children[x]
    siblings, spouses = family.siblings(x), family.spouses(x)
    members = {
        "parent": set(parents),
        "child": set(children),
        "spouse": set(spouses),
        "sibling": set(siblings),
        "grandparent": union(parents, family.parents_of),
        "grandchild": union(children, lambda c: family.children[c]),
        "pibling": union(parents, family.siblings) | union(list(union(parents, family.siblings)), family.spouses),
        "nibling": union(siblings, lambda s: family.children[s])
        | union(list(union(spouses, family.siblings)), lambda s: family.children[s]),
        "parent-in-law": union(spouses, family.parents_of),
        "child-in-law": union(children, family.spouses),
        "sibling-in-law": union(spouses, family.siblings) | union(siblings, family.spouses),
    }
    return {kind for kind, people in members.items() if z in people}


def graph_relation(family: Family, x: int, z: int) -> str | None:
    """The word for "z is x's WORD" read from the graph, or None unless exactly one relation holds."""
    kinds = relation_kinds(family, x, z)
    if len(kinds) != 1:
        return None
    return KIND_WORDS[kinds.pop()][family.gender[z] == "F"]


def distractor_facts(
    rng: random.Random, family: Family, people: Sequence[int], count: int
) -> list[tuple[int, str, int]] | None:
    """``count`` true facts (person, word, other) from people of the chain ``people`` to ``count`` different
    people outside it, so that they lead away from the chain and never make a second path between two of its
    people; None where the family has too few."""
    chain, used = set(people), set()
    facts = []
    for _ in range(count):
        options = [
            (person, word, other)
            for person in people
            for word, other in family.neighbours(person)
            if other not in chain and other not in used
        ]
        if not options:
            return None
        fact = rng.choice(options)
        facts.append(fact)
        used.add(fact[2])
    return facts


def find_chain(
    rng: random.Random, family: Family, k: int, budget: int = SEARCH_BUDGET
) -> tuple[list[int], list[str]] | None:
    """A chain of ``k`` basic facts through ``k + 1`` different people along which the composition table is
    determined at every step: (people, words), or None if a randomised depth-first search finds none
    within ``budget`` visits."""
    visits = 0

    def extend(people: list[int], words: list[str], relation: str | None) -> bool:
        nonlocal visits
        if len(words) == k:
            return True
        options = family.neighbours(people[-1])
        rng.shuffle(options)
        for word, other in options:
            visits += 1
            if visits > budget:
                return False
            if other in people:
                continue
            after = word if relation is None else COMPOSITION.get((relation, word))
            if after is None:
                continue
            people.append(other)
            words.append(word)
            if extend(people, words, after):
                return True
            people.pop()
            words.pop()
        return False

    starts = list(range(len(family)))
    rng.shuffle(starts)
    for start in starts[:8]:
        people: list[int] = [start]
        words: list[str] = []
        if extend(people, words, None):
            return people, words
        if visits > budget:
            return None
    return None


# ---------------------------------------------------------------------------------------------------
# Stories
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Story:
    """A drawn story: the chain length asked for, the family, the chain found (people and fact words; empty
    where none was), the names given to the chain, the written story (empty where none was) and the facts
    off the chain (person, word, other)."""

    k: int
    family: Family
    people: tuple[int, ...]
    words: tuple[str, ...]
    names: tuple[str, ...]
    text: str = ""
    distractors: tuple[tuple[int, str, int], ...] = ()


def name_pools(num_train_names: int) -> tuple[str, str]:
    """The names of ``train``/``validation`` (the first ``num_train_names`` letters) and of ``test`` (the rest):
    disjoint, so that the test shares no name with training."""
    return LETTERS[:num_train_names], LETTERS[num_train_names:]


def check_row(row: dict) -> str:
    """The relation a row's story composes to; ``ValueError`` unless it is the row's target and the
    ``num_symbols``/``size`` columns describe the story."""
    words = parse_story(row["input"])[1]
    answer = compose(words)
    if answer is None or answer != row["target"]:
        raise ValueError(f"{row['input']!r} composes to {answer!r}, not {row['target']!r}")
    people = len(story_people(row["input"]))
    if (row["num_symbols"], row["size"]) != (people, len(words)):
        raise ValueError(f"{row!r}: num_symbols and size should be {people} and {len(words)}")
    return answer


@dataclass
class StorySource:
    """Stories of one split: chain lengths in turn (``sizes``), names from ``pool``, a quota per length."""

    tag: str
    seed: int
    sizes: tuple[int, ...]
    pool: str
    distractors: int = 0
    max_index: int | None = None
    keys_all_listed: bool = True
    batch_size: int = 256
    drop_reasons: tuple[str, ...] = ("no chain", "no distractor", "graph disagrees", "check failed")

    def candidate(self, index: int, full: Callable[[Hashable], bool] | None = None) -> Story | None:
        k = self.sizes[index % len(self.sizes)]
        if full is not None and full(k):
            return None  # its quota is full: nothing to draw
        rng = derived_rng(self.seed, self.tag, index)
        family = random_family(rng)
        chain = find_chain(rng, family, k)
        if chain is None:
            return Story(k, family, (), (), ())
        people, words = chain
        if not self.distractors:
            names = rng.sample(self.pool, k + 1)
            return Story(k, family, tuple(people), tuple(words), tuple(names), format_story(names, words))
        extra = distractor_facts(rng, family, people, self.distractors)
        if extra is None:
            return Story(k, family, tuple(people), tuple(words), ())
        names = rng.sample(self.pool, k + 1 + self.distractors)
        name_of = dict(zip([*people, *(other for _, _, other in extra)], names))
        facts = [(names[i], word, names[i + 1]) for i, word in enumerate(words)]
        facts += [(name_of[person], word, name_of[other]) for person, word, other in extra]
        rng.shuffle(facts)
        text = format_facts(facts, (names[0], names[k]))
        return Story(k, family, tuple(people), tuple(words), tuple(names[: k + 1]), text, tuple(extra))

    def key(self, candidate: Story) -> Hashable:
        return candidate.k

    def identity(self, candidate: Story) -> Hashable:
        return candidate.text or None

    def realise(self, candidate: Story) -> Outcome:
        if not candidate.words:
            return Outcome(drop="no chain")
        if not candidate.text:
            return Outcome(drop="no distractor")
        composed = compose(candidate.words)
        read = graph_relation(candidate.family, candidate.people[0], candidate.people[-1])
        if composed is None or composed != read:
            return Outcome(drop="graph disagrees")  # never seen: the table holds in every family drawn
        if parse_story(candidate.text) != (list(candidate.names), list(candidate.words)):
            return Outcome(drop="check failed")  # never seen: distractors lead away from the chain
        k = len(candidate.words)
        people = k + 1 + self.distractors
        return Outcome(row={"input": candidate.text, "target": composed, "num_symbols": people, "size": k})


# ---------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------
CONFIGS: dict[str, ConfigSpec] = {
    spec.name: spec
    for spec in (
        ConfigSpec(
            "kinship",
            "kinship",
            "base",
            "Kinship stories: a chain of k family facts between people named by interchangeable letters -> the "
            "relation of the first to the last; train and validation k in {2, 3}, test k in 2..10 with names "
            "unseen in training.",
            100_000,
            13,
            10,
            min_size=2,
        ),
        ConfigSpec(
            "kinship-shuffled",
            "kinship",
            "base",
            f"Kinship stories whose facts are shuffled among {DISTRACTORS} true facts that lead away from the chain: "
            "the relation of the query's first person to its second, found by following the names; train and "
            "validation k in {2, 3}, test k in 2..10 with names unseen in training.",
            100_000,
            13,
            10,
            min_size=2,
        ),
        ConfigSpec(
            "kinship-test",
            "kinship",
            "grid",
            "Kinship stories for evaluation: stories of every chain length k in 2..10, names from the test pool "
            "(unseen in the training data of `kinship`).",
            1000,
            13,
            10,
            min_size=2,
        ),
    )
}

_FIELDS = {
    "input": "the story: facts `X REL Y` (Y is X's REL) separated by `,`, then the query `? X Z`",
    "target": "the relation REL with 'Z is X's REL' (one word)",
    "num_symbols": "people in the story (k + 1)",
    "size": "k, the number of facts",
}


def distractors_of(config: str) -> int:
    """The facts off the chain in every story of ``config``."""
    return DISTRACTORS if config == "kinship-shuffled" else 0


def _check(spec: ConfigSpec, params: BuildParams) -> None:
    train_pool, test_pool = name_pools(params.num_symbols)
    extra = distractors_of(spec.name)
    # The grid too: its test pool is the one `kinship` leaves with the same --num-symbols (and its card names both).
    if len(train_pool) < max(TRAIN_SIZES) + 1 + extra:
        raise ValueError(
            f"--num-symbols (the training names) must be at least {max(TRAIN_SIZES) + 1 + extra} for {spec.name}, "
            f"got {params.num_symbols}"
        )
    if len(test_pool) < params.max_size + 1 + extra:
        raise ValueError(
            f"stories of up to {params.max_size} facts need {params.max_size + 1 + extra} test names, but "
            f"--num-symbols {params.num_symbols} leaves {len(test_pool)} of {len(LETTERS)} letters; lower "
            "--max-size or --num-symbols"
        )


def _card(spec: ConfigSpec, params: BuildParams, dataset: datasets.DatasetDict, drops: Counter) -> str:
    train_pool, test_pool = name_pools(params.num_symbols)
    test_sizes = f"{params.min_size}..{params.max_size}"
    if spec.is_grid:
        how = (
            f"One `test` split: up to {params.num_samples} stories for every chain length k in {test_sizes}, "
            f"names from the test pool {test_pool[0]}..{test_pool[-1]} (the training data of `kinship` built "
            f"with `--num-symbols {params.num_symbols}` uses {train_pool[0]}..{train_pool[-1]})."
        )
    else:
        how = (
            f"{params.num_samples} stories split 80/10/10. `train` and `validation`: k in "
            f"{{{', '.join(map(str, TRAIN_SIZES))}}}, names from {train_pool[0]}..{train_pool[-1]}; `test`: k in "
            f"{test_sizes}, names from {test_pool[0]}..{test_pool[-1]}, so no test name occurs in training. Each "
            "split shares its stories equally among its chain lengths; no story appears twice in a split, nor in "
            "both `train` and `validation`."
        )
    kind_table = markdown_table(
        ["X's relation to Y", "Z is Y's ...", "X's relation to Z"],
        [
            tuple(f"{kind} ({'/'.join(KIND_WORDS[kind])})" for kind in (*pair, result))
            for pair, result in KIND_COMPOSITION.items()
        ],
    )
    by_k = markdown_table(
        ["split", *(f"k={k}" for k in range(params.min_size, params.max_size + 1))],
        [
            (name, *(Counter(split["size"]).get(k, 0) for k in range(params.min_size, params.max_size + 1)))
            for name, split in dataset.items()
        ],
    )
    answers: Counter[str] = Counter(t for split in dataset.values() for t in split["target"])
    extra = distractors_of(spec.name)
    shuffled = (
        f" Every story adds {extra} distractors: true facts of the family from a person of the chain to {extra} "
        "different people outside it (so they lead away from the chain and never open a second path between two "
        f"of its people), and writes its k + {extra} facts in a random order: the chain has to be found by "
        "following the names from the query's first person. The names are drawn for the chain and the "
        "distractors together."
        if extra
        else ""
    )
    command = (
        f"symbolinv data build {spec.name} --out DIR --num-samples {params.num_samples} --num-symbols "
        f"{params.num_symbols} --max-size {params.max_size} --seed {params.seed}"
    )
    return "\n".join(
        [
            card_metadata(dataset, FEATURES, f"symbolinv {spec.name}", ["symbolinv", "kinship", "synthetic"]),
            f"# {spec.name}\n\n{spec.description}\n",
            "Built locally by `hf_symbolinv` (package `dataset_builders`); relational reasoning over family "
            "graphs in the spirit of CLUTRR, with the people's names as interchangeable symbols. Metric: exact "
            "match of the relation word (task `kinship`: a word that is no relation is invalid).\n",
            "## Loading\n\n```python\nfrom datasets import load_dataset\n\n"
            'dataset = load_dataset("path/to/this/directory")  # or load_dataset(REPO_ID, name=CONFIG)\n```\n',
            "## Format\n\nWhitespace-separated tokens. A fact `X REL Y` reads 'Y is X's REL'; facts are "
            "separated by `,`; `? X Z` asks for the relation of X to Z, the ends of the one chain of k facts "
            "from X to Z (each starting with the person the previous one ended with). Example: input "
            + (
                "`b son d , b sister c , a father b ? a c` (the chain `a father b`, `b sister c`; `b son d` leads away)"
                if extra
                else "`a father b , b sister c ? a c`"
            )
            + ", target `aunt`. The names are single lowercase letters (the "
            "symbols); facts use the basic words "
            + ", ".join(w for kind in FACT_KINDS for w in KIND_WORDS[kind])
            + f"; the {len(RELATION_WORDS)} answer words are "
            + ", ".join(RELATION_WORDS)
            + ".\n",
            "## Fields\n\n"
            + markdown_table(["field", "type", "meaning"], [(n, f.dtype, _FIELDS[n]) for n, f in FEATURES.items()])
            + "\n",
            "## Splits\n\n" + markdown_table(["split", "samples"], [(n, len(s)) for n, s in dataset.items()]) + "\n",
            f"## How it was generated\n\n{how}\n\n"
            f"Each candidate draws a family: a founding couple, 1..{MAX_CHILDREN} children per couple over "
            f"{GENERATIONS} generations, each child marrying someone from outside the family with probability "
            f"{MARRIAGE_CHANCE} (men marry women, once; every child has both parents, so siblings share both). "
            "Then a randomised depth-first search finds a chain of k basic facts (parent, child, sibling, spouse) "
            "through k + 1 different people along which the composition table below determines the relation at "
            "every step, and k + 1 names are drawn from the split's pool. A story is kept only if the relation "
            "the chain composes to is also the one relation the family graph gives between its two people "
            f"(candidates dropped: {', '.join(f'{r} {n}' for r, n in sorted(drops.items())) or 'none'})."
            f"{shuffled}\n",
            "Relation definitions ('Z is X's ...'): uncle/aunt: a sibling of a parent or the spouse of one; "
            "nephew/niece: a child of a sibling or of a sibling of the spouse; brother-/sister-in-law: a "
            "sibling of the spouse or the spouse of a sibling; father-/mother-in-law: a parent of the spouse; "
            "son-/daughter-in-law: the spouse of a child.\n",
            f"## Composition table\n\nThe answer composes the facts from left to right: X's relation to the "
            f"n-th person and the next fact give X's relation to the next person. The table holds the "
            f"{len(KIND_COMPOSITION)} compositions of relation kinds that are certain in every family of the "
            f"model ({len(COMPOSITION)} entries on words: the result takes the gender of the fact's word); a "
            "chain reaching a pair not listed is not drawn.\n\n" + kind_table + "\n",
            f"## Statistics\n\nStories per chain length k:\n\n{by_k}\n\nAnswers: "
            + ", ".join(f"{w}: {answers[w]}" for w in RELATION_WORDS if answers[w])
            + ".\n",
            f"## Reproducibility\n\nOne random stream per candidate (seed {params.seed}), so the result depends "
            f"only on the parameters, not on the machine or `--workers`. Rebuild with `{command}`.\n",
        ]
    )


def build_kinship(
    config: str = "kinship", out_dir: str | os.PathLike | None = None, options: BuildOptions | None = None
) -> datasets.DatasetDict:
    """Build a kinship configuration as ``options`` ask (default: its parameters) and return it as a
    ``DatasetDict``.

    ``num_samples``: stories before splitting (``kinship-test``: stories per chain length);
    ``num_symbols``: the training names (the first letters; the test draws from the rest); ``max_size``: the
    longest test chain. With ``out_dir`` the dataset is written there too; a dataset of other parameters
    already there is replaced only with ``options.overwrite``. ``on_accept`` is called with the stories accepted
    so far, over all splits.
    """
    options = checked_options(options)
    if config not in CONFIGS:
        raise ValueError(f"unknown kinship configuration {config!r}; choose one of {', '.join(CONFIGS)}")
    spec = CONFIGS[config]
    options.refuse_unused(config)
    params = resolve_params(spec, options)
    _check(spec, params)
    train_pool, test_pool = name_pools(params.num_symbols)
    test_sizes = tuple(range(params.min_size, params.max_size + 1))
    if spec.is_grid:
        plan = {"test": (test_sizes, test_pool, equal_quotas(params.num_samples * len(test_sizes), test_sizes))}
    else:
        counts = split_counts(params.num_samples, SPLIT_FRACTIONS)
        plan = {
            "train": (TRAIN_SIZES, train_pool, equal_quotas(counts["train"], TRAIN_SIZES)),
            "validation": (TRAIN_SIZES, train_pool, equal_quotas(counts["validation"], TRAIN_SIZES)),
            "test": (test_sizes, test_pool, equal_quotas(counts["test"], test_sizes)),
        }
    info = {"config": spec.name, "family": "kinship", "stories": STORY_VERSION, **params.as_dict()}
    info["fingerprint"] = fingerprint_of(info)
    with BuildDirectory(out_dir, info, overwrite=options.overwrite) as directory:
        if directory.built is not None:
            return directory.built
        splits: dict[str, list[dict]] = {}
        drops: Counter[str] = Counter()
        done = 0
        on_accept = options.on_accept  # called with the count over all splits
        for name, (sizes, pool, limits) in plan.items():
            total = sum(limits.values())
            # Validation repeats no training story (test names differ from training names anyway).
            exclude = [row["input"] for row in splits.get("train", ())] if name == "validation" else []
            source = StorySource(
                f"{spec.name}/{name}",
                params.seed,
                sizes,
                pool,
                distractors=distractors_of(spec.name),
                max_index=ATTEMPTS_PER_SAMPLE * total + ATTEMPTS_EXTRA,
            )
            rows, state = generate(
                source,
                total,
                FEATURES,
                directory.part(f"{spec.name}-{name}"),
                info["fingerprint"],
                limits=limits,
                workers=options.workers,
                chunk_size=options.chunk_size or default_chunk_size(total),
                description=f"{spec.name} {name}",
                on_accept=None if on_accept is None else (lambda n, offset=done: on_accept(offset + n)),
                unique="input",
                exclude=exclude,
                progress=options.progress,
            )
            drops.update(state.drops)
            done += len(rows)
            if name == "test":
                rows.sort(key=lambda row: row["size"])  # stable: in draw order within a chain length
            else:
                derived_rng(params.seed, "shuffle", name).shuffle(rows)
            splits[name] = rows
        info["splits"] = {name: len(rows) for name, rows in splits.items() if rows}
        return write_dataset(
            directory.path, splits, FEATURES, lambda dataset: _card(spec, params, dataset, drops), info
        )
