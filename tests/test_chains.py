"""Answering a CLUTRR story by composing its chain two facts at a time: the chain read from a story, the chart
against a brute-force reference over every bracketing, renaming the people, and the evaluation's two ways of
answering."""

from __future__ import annotations

import itertools
import math
import random
from functools import cache

import pytest
import torch
from transformers import AutoTokenizer

from hf_symbolinv.evaluation.chains import ChainComposer, composed_answers
from hf_symbolinv.pretrained import shipped_model
from hf_symbolinv.tasks.clutrr import story_chain

RELATIONS = ("father", "mother", "son", "daughter", "brother")


class PairTableModel(torch.nn.Module):
    """A stand-in for a seq2seq model that answers the two-fact story ``a R1 b , b R2 c ? a c`` with a fixed
    distribution per pair (its first answer token's logits), so that the chart can be checked exactly."""

    def __init__(self, tokenizer, table: dict[tuple[str, str], list[float]]) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.config = type("Config", (), {"decoder_start_token_id": 2})()
        vocabulary = tokenizer.get_vocab()
        self.size = max(vocabulary.values()) + 1
        self.ids = {word: vocabulary[word] for word in RELATIONS}
        self.words = {index: word for word, index in self.ids.items()}
        self.table = table

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor, **_: object):
        logits = torch.full((len(input_ids), 1, self.size), -1e4)
        for row, ids in enumerate(input_ids.tolist()):
            first, second = self.words[ids[1]], self.words[ids[5]]  # a R1 b , b R2 c ? a c
            for word, value in zip(RELATIONS, self.table[(first, second)]):
                logits[row, 0, self.ids[word]] = value
        return type("Output", (), {"logits": logits})()


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(shipped_model("clutrr"))


def _random_table(seed: int) -> dict[tuple[str, str], list[float]]:
    rng = random.Random(seed)
    return {pair: [rng.gauss(0, 2) for _ in RELATIONS] for pair in itertools.product(RELATIONS, repeat=2)}


def _reference(chain: tuple[str, ...], table: dict[tuple[str, str], list[float]]) -> dict[str, float]:
    """Every relation the chain can compose to, with the best log-probability over every bracketing and every
    choice of relation at every inner node (no pruning)."""
    log_probs = {
        pair: dict(zip(RELATIONS, torch.tensor(values).log_softmax(-1).tolist())) for pair, values in table.items()
    }

    @cache
    def best(i: int, j: int) -> tuple[tuple[str, float], ...]:
        if j - i == 1:
            return ((chain[i], 0.0),)
        found: dict[str, float] = {}
        for middle in range(i + 1, j):
            for left, left_score in best(i, middle):
                for right, right_score in best(middle, j):
                    for relation, score in log_probs[(left, right)].items():
                        total = left_score + right_score + score
                        found[relation] = max(found.get(relation, -math.inf), total)
        return tuple(found.items())

    return dict(best(0, len(chain)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_chart_finds_the_best_derivation_of_every_bracketing(tokenizer, seed: int) -> None:
    table = _random_table(seed)
    composer = ChainComposer(PairTableModel(tokenizer, table), tokenizer, RELATIONS, beam=len(RELATIONS))
    rng = random.Random(seed)
    for length in range(1, 7):
        chain = tuple(rng.choice(RELATIONS) for _ in range(length))
        expected = _reference(chain, table)
        answer = composer.compose(chain)
        assert set(answer.relations) == set(expected)
        assert answer.relations[0] == max(expected, key=expected.get)
        for relation, score in zip(answer.relations, answer.scores):
            assert score == pytest.approx(expected[relation], abs=1e-4)
        assert answer.derivation.count("(") == length - 1 and answer.derivation.replace("(", "").replace(
            ")", ""
        ).split() == list(chain)


def test_a_narrow_beam_keeps_the_best_relations_of_each_span_only(tokenizer) -> None:
    # One relation per span: the chart is a greedy reduction, whose answer is still one of the reference's.
    table = _random_table(3)
    composer = ChainComposer(PairTableModel(tokenizer, table), tokenizer, RELATIONS, beam=1)
    chain = ("father", "son", "brother", "mother")
    answer = composer.compose(chain)
    assert len(answer.relations) >= 1 and answer.relations[0] in _reference(chain, table)
    with pytest.raises(ValueError, match="beam must be at least 1"):
        ChainComposer(PairTableModel(tokenizer, table), tokenizer, RELATIONS, beam=0)
    with pytest.raises(ValueError, match="cannot compose"):
        composer.compose(("father", "cousin"))


def test_the_chain_is_the_facts_as_written_where_they_walk_from_one_person_to_the_other() -> None:
    assert story_chain("a father b , b sister c ? a c") == ["father", "sister"]
    # A chain may pass a person twice (CLUTRR's longer chains do): the written walk is the chain.
    assert story_chain("a brother b , b father c , c son b , b sister d ? a d") == [
        "brother",
        "father",
        "son",
        "sister",
    ]
    # Facts written out of order: the one chain from the query's first person to its second.
    assert story_chain("b sister c , a father b ? a c") == ["father", "sister"]
    with pytest.raises(ValueError, match="no chain of facts"):
        story_chain("a father b , c sister d ? a d")


def test_composed_answers_do_not_depend_on_the_names_of_the_people() -> None:
    from hf_symbolinv.models.folders import load_model

    model, tokenizer, _ = load_model(str(shipped_model("clutrr")))
    stories = [
        "a wife b , b son c , c uncle d , d daughter e ? a e",
        "q wife x , x son m , m uncle z , z daughter k ? q k",
        "a father b , b sister c ? a c",
    ]
    answers = composed_answers(model, tokenizer, stories, beam=3, top_n=2)
    assert answers[0] == answers[1] and len(answers[0]) == 2
    assert answers[2][0] == "aunt"
    # A story without a single chain is read whole by the model: still one relation word.
    (whole,) = composed_answers(model, tokenizer, ["a father b , c sister d ? a d"], beam=1)
    assert len(whole) == 1 and whole[0].strip()
