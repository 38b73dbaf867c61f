"""The kinship task and its dataset builder: the composition table agrees with the family graph, stories
compose to their targets, the splits keep their chain lengths and name pools, the judge and the tokenizer
read the stories, and the command line builds the dataset."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import datasets
import pytest

import dataset_builders
from dataset_builders.kinship import (
    DISTRACTORS,
    TRAIN_SIZES,
    Family,
    StorySource,
    check_row,
    graph_relation,
    name_pools,
    random_family,
    relation_kinds,
)
from dataset_builders.output import FEATURES, LETTERS
from dataset_builders.params import BuildOptions
from hf_symbolinv.commands import main
from hf_symbolinv.models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer
from hf_symbolinv.tasks import get_task
from hf_symbolinv.tasks.kinship import (
    COMPOSITION,
    FACT_SEPARATOR,
    FACT_WORDS,
    KIND_COMPOSITION,
    QUERY_MARK,
    RELATION_WORDS,
    compose,
    format_story,
    judge,
    parse_story,
    read_facts,
    story_answer,
    story_people,
)
from hf_symbolinv.tasks.vocabulary import SPECIAL_TOKENS, get_vocabulary

SAMPLES = 90  # a tiny build: 72/9/9 stories, so the test split has one story per k in 2..10
MAX_K = dataset_builders.configs()["kinship"].max_size


# ---------------------------------------------------------------------------------------------------
# The composition table
# ---------------------------------------------------------------------------------------------------
def _near(family: Family, x: int, steps: int = 3) -> set[int]:
    """The people within ``steps`` basic facts of ``x``: every relation named here is (an uncle by marriage
    is parent -> sibling -> spouse)."""
    reached, frontier = {x}, {x}
    for _ in range(steps):
        frontier = {other for person in frontier for _, other in family.neighbours(person)} - reached
        reached |= frontier
    return reached - {x}


def test_every_composition_agrees_with_the_family_graph_and_is_exercised() -> None:
    used: Counter[tuple[str, str]] = Counter()
    wrong: list[tuple[str, str, str | None]] = []
    for seed in range(60):
        family = random_family(random.Random(seed))
        for x in range(len(family)):
            for y in _near(family, x):
                left = graph_relation(family, x, y)  # y is x's LEFT, the one relation between them
                if left is None:
                    continue
                for fact, z in family.neighbours(y):  # z is y's FACT
                    if z == x or (left, fact) not in COMPOSITION:
                        continue
                    used[left, fact] += 1
                    if graph_relation(family, x, z) != COMPOSITION[left, fact]:
                        wrong.append((left, fact, graph_relation(family, x, z)))
        if len(used) == len(COMPOSITION) and seed >= 10:
            break
    assert not wrong, f"table entries the graph contradicts: {sorted(set(wrong))[:10]}"
    assert set(COMPOSITION) - set(used) == set(), "table entries no family exercises (impossible or untested)"


def test_the_family_graph_gives_at_most_one_relation_per_pair() -> None:
    family = random_family(random.Random(1))
    pairs = [(x, z) for x in range(len(family)) for z in _near(family, x)]
    assert pairs and all(len(relation_kinds(family, x, z)) <= 1 for x, z in pairs)


def test_the_word_table_is_the_kind_table_in_both_genders() -> None:
    # every kind entry gives 2 left words x 2 fact words, less the same-sex couples of a spouse fact
    spouse_entries = sum(fact == "spouse" for _, fact in KIND_COMPOSITION)
    assert len(COMPOSITION) == 4 * len(KIND_COMPOSITION) - 2 * spouse_entries
    assert set(COMPOSITION.values()) <= set(RELATION_WORDS)
    assert {fact for _, fact in COMPOSITION} <= set(FACT_WORDS)


@pytest.mark.parametrize(
    "words, answer",
    [
        (["father", "sister"], "aunt"),
        (["mother", "father"], "grandfather"),
        (["wife", "brother"], "brother-in-law"),
        (["brother", "wife"], "sister-in-law"),
        (["father", "wife"], "mother"),
        (["son", "mother"], "wife"),
        (["daughter", "son"], "grandson"),
        (["husband", "mother"], "mother-in-law"),
        (["son", "wife"], "daughter-in-law"),
        (["sister", "daughter"], "niece"),
        (["father", "brother", "wife"], "aunt"),
        (["father", "son", "son"], "nephew"),
        (["wife", "sister", "son"], "nephew"),
        (["mother", "mother", "husband"], "grandfather"),
        (["son", "wife", "daughter"], "granddaughter"),
        (["brother", "brother", "sister"], "sister"),
        (["uncle"], "uncle"),
        (["father", "father", "father"], None),  # great-grandfather: not named
        (["father", "brother", "son"], None),  # a cousin
        (["mother", "mother", "son"], None),  # the grandmother's son: the father or an uncle
        (["brother", "husband"], None),  # men marry women: no family has this chain
        (["father", "husband"], None),
        # certain in the builder's families only because those who marry in have no parents there
        (["uncle", "father"], None),  # an uncle by marriage's father is no relative
        (["sister-in-law", "mother"], None),  # the mother-in-law, or the brother's wife's mother
        ([], None),
    ],
)
def test_compose_known_chains(words: list[str], answer: str | None) -> None:
    assert compose(words) == answer


# ---------------------------------------------------------------------------------------------------
# Written stories and the judge
# ---------------------------------------------------------------------------------------------------
def test_stories_format_and_parse_back() -> None:
    story = format_story(["a", "b", "c"], ["father", "sister"])
    assert story == "a father b , b sister c ? a c"
    assert parse_story(story) == (["a", "b", "c"], ["father", "sister"])
    assert story_answer(story) == "aunt"
    assert get_task("kinship").input_size(story) == 2
    assert list(get_task("kinship").symbol_names("c father b , b sister a ? c a")) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="needs 3 names"):
        format_story(["a", "b"], ["father", "sister"])


def test_a_shuffled_story_with_distractors_reads_its_one_chain() -> None:
    story = "b son d , b sister c , d wife e , a father b ? a c"  # facts out of order; b son d, d wife e lead away
    assert parse_story(story) == (["a", "b", "c"], ["father", "sister"]) and story_answer(story) == "aunt"
    assert story_people(story) == ["b", "d", "c", "e", "a"]
    assert list(get_task("kinship").symbol_names(story)) == ["a", "b", "c", "d", "e"]
    assert get_task("kinship").input_size(story) == 2
    assert parse_story("a father b , b sister c ? a b") == (["a", "b"], ["father"])  # any two people of a chain


@pytest.mark.parametrize(
    "story, message",
    [
        ("a father b , c sister d ? a d", "no chain of facts leads from 'a' to 'd'"),
        ("a father b , b sister c ? a x", "no chain of facts leads from 'a' to 'x'"),
        ("a father b , a son c , b sister d , c brother d ? a d", "more than one chain of facts leads from 'a'"),
        ("a father b , b sister a ? a a", "two different names"),
        ("a father b , b sister c", r"no query \('\?'\)"),
        ("a father b , b sister c ?", "the query .* is not '\\? NAME NAME'"),
        ("a aunt b , b sister c ? a c", "fact 1 .* with a basic relation"),
        ("a father b b sister c ? a c", "fact 1 .* is not 'NAME RELATION NAME'"),
        ("a father sister ? a sister", "fact 1 .* is not 'NAME RELATION NAME'"),
    ],
)
def test_a_broken_story_names_what_is_wrong(story: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_story(story)


@pytest.mark.parametrize(
    "story, prediction, reference, correct, invalid, unknown",
    [
        ("a father b , b sister c ? a c", "aunt", None, True, False, False),
        ("a father b , b sister c ? a c", " aunt\n", "aunt", True, False, False),
        ("a father b , b sister c ? a c", "uncle", None, False, False, False),  # wrong gender
        ("a father b , b sister c ? a c", "mother", "aunt", False, False, False),
        ("a father b , b sister c ? a c", "cousin", None, False, True, False),  # no relation word
        ("a father b , b sister c ? a c", "a", None, False, True, False),
        ("a father b , b sister c ? a c", ",", None, False, True, False),
        ("a father b , b father c ? a c", "grandfather", None, True, False, False),
        ("a father b , b brother c , c son d ? a d", "nephew", None, False, False, True),  # undetermined
        ("a mother b , b mother c , c son d ? a d", "uncle", "uncle", True, False, False),  # the reference decides
        ("a mother b , b mother c , c son d ? a d", "father", "uncle", False, False, False),
    ],
)
def test_the_judge_by_known_verdicts(
    story: str, prediction: str, reference: str | None, correct: bool, invalid: bool, unknown: bool
) -> None:
    verdict = get_task("kinship").judge(story, prediction, reference, None)
    assert (verdict.correct, verdict.invalid, verdict.unknown) == (correct, invalid, unknown)
    assert verdict == judge(story, prediction, reference)


def test_the_judge_refuses_a_source_that_is_not_a_story() -> None:
    with pytest.raises(ValueError, match="no chain of facts"):
        judge("a father b , c sister d ? a d", "aunt")


# ---------------------------------------------------------------------------------------------------
# The tokenizer
# ---------------------------------------------------------------------------------------------------
def test_the_vocabulary_holds_exactly_the_relation_words_and_separators() -> None:
    base = get_vocabulary("kinship").base_tokens
    assert base[: len(SPECIAL_TOKENS)] == SPECIAL_TOKENS
    assert set(base[len(SPECIAL_TOKENS) :]) == {*RELATION_WORDS, FACT_SEPARATOR, QUERY_MARK}
    assert len(base) == len(set(base)) == len(SPECIAL_TOKENS) + len(RELATION_WORDS) + 2
    assert get_task("kinship").vocabulary == "kinship"


@pytest.mark.parametrize(
    "story, answer",
    [
        ("a father b , b sister c ? a c", "aunt"),
        ("m wife c , c father k , k wife e ? m e", "mother-in-law"),
        # the test pool: letters keep their fixed slots (n -> 13 ... z -> 25), so 26 slots are needed
        ("z son y , y brother x , x daughter n ? z n", "granddaughter"),
    ],
)
def test_tokenizer_round_trips_kinship_stories(story: str, answer: str) -> None:
    tokenizer = SymbolInvTokenizer.from_preset("kinship", max_symbols=len(LETTERS))
    encoded = tokenizer(story, text_target=answer, return_symbol_names=True)
    names = encoded["symbol_names"]
    assert tokenizer.decode(encoded["input_ids"], skip_special_tokens=True, symbol_names=names) == story
    assert tokenizer.decode(encoded["labels"], skip_special_tokens=True) == answer
    assert story_answer(story) == answer
    tokens = story.split()
    assert len(encoded["input_ids"]) == len(tokens) + 1  # one id per word, then <eos>
    people = set(parse_story(story)[0])
    assert encoded["symbol_mask"][:-1] == [int(token in people) for token in tokens]
    for word in RELATION_WORDS:  # every relation word is one base token
        assert tokenizer.tokenize(word) == [word]
        assert tokenizer.convert_tokens_to_ids(word) < tokenizer.num_base_tokens


def test_the_documented_tokenizer_reads_training_stories() -> None:
    tokenizer = SymbolInvTokenizer.from_preset("kinship", max_symbols=16)
    ids = tokenizer("a father b , b sister c ? a c")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == [*"a father b , b sister c ? a c".split(), "<eos>"]


# ---------------------------------------------------------------------------------------------------
# The dataset builder
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, datasets.DatasetDict]:
    out = tmp_path_factory.mktemp("kinship") / "kinship"
    dataset = dataset_builders.build("kinship", out, BuildOptions(num_samples=SAMPLES, workers=1, progress=False))
    return out, dataset


def test_the_name_pools_are_disjoint() -> None:
    train_pool, test_pool = name_pools(13)
    assert (train_pool, test_pool) == (LETTERS[:13], LETTERS[13:])
    assert not set(train_pool) & set(test_pool)


def test_every_row_composes_to_its_target(built: tuple[Path, datasets.DatasetDict]) -> None:
    _, dataset = built
    assert list(dataset) == ["train", "validation", "test"]
    assert {n: len(s) for n, s in dataset.items()} == {"train": 72, "validation": 9, "test": 9}
    for split in dataset.values():
        assert split.features == FEATURES
        for row in split:
            assert check_row(row) == row["target"] == story_answer(row["input"])
            names, words = parse_story(row["input"])
            assert (row["num_symbols"], row["size"]) == (len(names), len(words)) == (len(words) + 1, len(words))
    broken = {**dataset["train"][0], "target": "cousin"}
    with pytest.raises(ValueError, match="composes to"):
        check_row(broken)
    with pytest.raises(ValueError, match="num_symbols and size"):
        check_row({**dataset["train"][0], "size": 7})


def test_splits_keep_their_chain_lengths_and_name_pools(built: tuple[Path, datasets.DatasetDict]) -> None:
    _, dataset = built
    train_pool, test_pool = name_pools(dataset_builders.configs()["kinship"].num_symbols)
    for name in ("train", "validation"):
        sizes = Counter(dataset[name]["size"])
        assert set(sizes) == set(TRAIN_SIZES) and max(sizes.values()) - min(sizes.values()) <= 1  # equal shares
        assert {p for row in dataset[name] for p in parse_story(row["input"])[0]} <= set(train_pool)
    assert sorted(dataset["test"]["size"]) == list(range(2, MAX_K + 1))  # every k once, sorted by k
    assert dataset["test"]["size"] == sorted(dataset["test"]["size"])
    assert {p for row in dataset["test"] for p in parse_story(row["input"])[0]} <= set(test_pool)


def test_no_story_repeats(built: tuple[Path, datasets.DatasetDict]) -> None:
    _, dataset = built
    train = dataset["train"]["input"]
    assert len(set(train)) == len(train)
    assert len(set(dataset["validation"]["input"])) == len(dataset["validation"])
    assert not set(train) & set(dataset["validation"]["input"])


def test_drawn_answers_are_the_one_relation_of_the_family_graph() -> None:
    source = StorySource("check", 0, (2, 3, 5, 8), LETTERS[13:])
    kept = 0
    for index in range(40):
        story = source.candidate(index)
        outcome = source.realise(story)
        assert outcome.drop in (None, "no chain")
        if outcome.row is None:
            continue
        kept += 1
        first, last = story.people[0], story.people[-1]
        assert len(relation_kinds(story.family, first, last)) == 1
        assert graph_relation(story.family, first, last) == outcome.row["target"] == compose(story.words)
        assert len(set(story.people)) == len(story.people) == story.k + 1
        # each fact holds in the family: the next person is among the neighbours by that word
        for i, word in enumerate(story.words):
            assert (word, story.people[i + 1]) in story.family.neighbours(story.people[i])
    assert kept >= 30


def _walk(facts: list[tuple[str, str, str]], start: str, end: str) -> list[list[str]]:
    """Every simple path of facts from ``start`` to ``end``: the words along it."""
    if start == end:
        return [[]]
    return [
        [word, *rest]
        for x, word, y in facts
        if x == start
        for rest in _walk([f for f in facts if start not in (f[0], f[2])], y, end)
    ]


def test_shuffled_stories_hide_one_chain_among_distractors() -> None:
    """Every kinship-shuffled story: k + 2 facts, all true of one family; exactly one path of facts from the
    query's first person to its second, of k facts, composing to the target; the facts are not always written
    in chain order; the two distractors name two more people."""
    dataset = dataset_builders.build(
        "kinship-shuffled", None, BuildOptions(num_samples=SAMPLES, workers=1, progress=False)
    )
    assert {n: len(s) for n, s in dataset.items()} == {"train": 72, "validation": 9, "test": 9}
    in_chain_order = 0
    for split in dataset.values():
        for row in split:
            facts, (first, last) = read_facts(row["input"])
            paths = _walk(facts, first, last)
            assert len(paths) == 1 and len(paths[0]) == row["size"], row
            assert compose(paths[0]) == row["target"] == check_row(row)
            assert len(facts) == row["size"] + DISTRACTORS
            assert row["num_symbols"] == len({n for f in facts for n in f[::2]}) == row["size"] + 1 + DISTRACTORS
            in_chain_order += [f[1] for f in facts[: row["size"]]] == paths[0] and facts[0][0] == first
    assert in_chain_order < len(dataset["train"]) // 2
    train_pool, test_pool = name_pools(13)
    assert {n for row in dataset["test"] for n in story_people(row["input"])} <= set(test_pool)
    assert sorted(dataset["test"]["size"]) == list(range(2, MAX_K + 1))
    source = StorySource("check", 0, (3,), LETTERS[13:], distractors=DISTRACTORS)
    drawn = [source.candidate(index) for index in range(20)]
    assert sum(bool(story.text) for story in drawn) >= 10
    for story in drawn:
        others = [other for _, _, other in story.distractors]
        assert len(set(others)) == len(others) == (DISTRACTORS if story.text else len(others))
        assert not set(others) & set(story.people)  # they lead away from the chain
        for person, word, other in story.distractors:  # and hold in the family
            assert person in story.people and (word, other) in story.family.neighbours(person)
    with pytest.raises(ValueError, match="need 13 test names"):
        dataset_builders.build("kinship-shuffled", None, BuildOptions(num_samples=20, num_symbols=14, progress=False))


def test_the_card_names_the_splits_and_no_candidate_disagreed(built: tuple[Path, datasets.DatasetDict]) -> None:
    out, dataset = built
    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "# kinship" in card
    for name, split in dataset.items():
        assert f"| {name} | {len(split)} |" in card
    assert "graph disagrees 0" in card
    loaded = datasets.load_dataset(str(out))
    assert {n: s.to_list() for n, s in loaded.items()} == {n: s.to_list() for n, s in dataset.items()}


def test_the_same_seed_gives_the_same_rows_and_another_seed_others(built: tuple[Path, datasets.DatasetDict]) -> None:
    _, dataset = built
    again = dataset_builders.build("kinship", None, BuildOptions(num_samples=SAMPLES, workers=1, progress=False))
    other = dataset_builders.build(
        "kinship", None, BuildOptions(num_samples=SAMPLES, seed=1, workers=1, progress=False)
    )
    rows = {n: s.to_list() for n, s in dataset.items()}
    assert {n: s.to_list() for n, s in again.items()} == rows
    assert set(other["train"]["input"]) != set(dataset["train"]["input"])
    assert other["test"]["input"] != dataset["test"]["input"]


def test_the_test_grid_has_every_chain_length_from_the_test_pool() -> None:
    dataset = dataset_builders.build(
        "kinship-test", None, BuildOptions(num_samples=2, max_size=6, workers=1, progress=False)
    )
    assert list(dataset) == ["test"]
    assert Counter(dataset["test"]["size"]) == dict.fromkeys(range(2, 7), 2)
    _, test_pool = name_pools(13)
    for row in dataset["test"]:
        check_row(row)
        assert set(parse_story(row["input"])[0]) <= set(test_pool)


@pytest.mark.parametrize(
    "config, options, message",
    [
        ("kinship", {"num_symbols": 3}, "at least 4"),
        ("kinship-test", {"num_symbols": 0}, "at least 4"),
        ("kinship", {"num_symbols": 20}, "need 11 test names"),
        ("kinship-test", {"max_size": 13}, "need 14 test names"),
        ("kinship", {"max_size": 1}, "--max-size must be at least 2"),
    ],
)
def test_impossible_parameters_are_refused(config: str, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataset_builders.build(config, None, BuildOptions(num_samples=9, workers=1, progress=False, **options))


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def test_cli_builds_kinship(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kinship"
    argv = ["data", "build", "kinship", "--out", str(out), "--num-samples", "30", "--workers", "1", "--quiet"]
    assert main(argv) == 0
    assert "wrote kinship" in capsys.readouterr().out
    loaded = datasets.load_dataset(str(out))
    assert {n: len(s) for n, s in loaded.items()} == {"train": 24, "validation": 3, "test": 3}
    assert (out / "README.md").exists()


@pytest.mark.parametrize(
    "options, message",
    [
        (["--num-symbols", "20"], "need 11 test names"),
        (["--num-samples", "0"], "--num-samples"),
    ],
)
def test_cli_refuses_a_bad_option_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    argv = ["data", "build", "kinship", "--out", str(tmp_path / "x"), "--quiet", *options]
    try:
        status = main(argv)
    except SystemExit as stop:  # argparse's own errors
        status = stop.code
    assert status == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0]
    assert not (tmp_path / "x" / "build_info.json").exists()
