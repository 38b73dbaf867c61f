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


class StoryTableModel(torch.nn.Module):
    """A stand-in for a seq2seq model that answers a short story ``a R1 b , b R2 c ... ? a z`` with a fixed
    distribution per chain of relations (its first answer token's logits, drawn from the chain and a seed), so
    that the chart can be checked exactly."""

    def __init__(self, tokenizer, seed: int) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.config = type("Config", (), {"decoder_start_token_id": 2})()
        vocabulary = tokenizer.get_vocab()
        self.size = max(vocabulary.values()) + 1
        self.ids = {word: vocabulary[word] for word in RELATIONS}
        self.words = {index: word for word, index in self.ids.items()}
        self.seed = seed
        self.asked: list[tuple[str, ...]] = []

    def logits_of(self, chain: tuple[str, ...]) -> list[float]:
        rng = random.Random(f"{self.seed}:{' '.join(chain)}")
        return [rng.gauss(0, 2) for _ in RELATIONS]

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor, **_: object):
        logits = torch.full((len(input_ids), 1, self.size), -1e4)
        for row, ids in enumerate(input_ids.tolist()):
            chain = tuple(self.words[token] for token in ids if token in self.words)  # the facts' words, in order
            self.asked.append(chain)
            for word, value in zip(RELATIONS, self.logits_of(chain)):
                logits[row, 0, self.ids[word]] = value
        return type("Output", (), {"logits": logits})()


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(shipped_model("clutrr"))


def _reference(chain: tuple[str, ...], model: StoryTableModel, max_span: int) -> dict[str, float]:
    """Every relation the chain can compose to, with the best log-probability over every way of cutting every span
    into 2..max_span parts and every choice of relation for every part (no pruning)."""

    def log_probs(parts: tuple[str, ...]) -> dict[str, float]:
        return dict(zip(RELATIONS, torch.tensor(model.logits_of(parts)).log_softmax(-1).tolist()))

    @cache
    def best(i: int, j: int) -> tuple[tuple[str, float], ...]:
        if j - i == 1:
            return ((chain[i], 0.0),)
        found: dict[str, float] = {}
        for parts in range(2, min(max_span, j - i) + 1):
            for cuts in itertools.combinations(range(i + 1, j), parts - 1):
                bounds = (i, *cuts, j)
                for choice in itertools.product(*(best(a, b) for a, b in zip(bounds, bounds[1:]))):
                    below = sum(score for _, score in choice)
                    for relation, score in log_probs(tuple(word for word, _ in choice)).items():
                        found[relation] = max(found.get(relation, -math.inf), below + score)
        return tuple(found.items())

    return dict(best(0, len(chain)))


@pytest.mark.parametrize(("seed", "max_span"), [(0, 2), (1, 2), (2, 3), (3, 3)])
def test_the_chart_finds_the_best_derivation_of_every_way_of_cutting_the_chain(
    tokenizer, seed: int, max_span: int
) -> None:
    model = StoryTableModel(tokenizer, seed)
    composer = ChainComposer(model, tokenizer, RELATIONS, beam=len(RELATIONS), max_span=max_span)
    rng = random.Random(seed)
    for length in range(1, 6):
        chain = tuple(rng.choice(RELATIONS) for _ in range(length))
        expected = _reference(chain, model, max_span)
        answer = composer.compose(chain)
        assert set(answer.relations) == set(expected)
        assert answer.relations[0] == max(expected, key=expected.get)
        for relation, score in zip(answer.relations, answer.scores):
            assert score == pytest.approx(expected[relation], abs=1e-4)
        leaves = answer.derivation.replace("(", " ").replace(")", " ").split()
        assert leaves == list(chain)
    # Only stories of 2..max_span facts were asked, each once.
    assert {len(story) for story in model.asked} <= set(range(2, max_span + 1))
    assert len(model.asked) == len(set(model.asked))


def test_a_narrow_beam_keeps_the_best_relations_of_each_span_only(tokenizer) -> None:
    # One relation per span: the chart is a greedy reduction, whose answer is still one of the reference's.
    model = StoryTableModel(tokenizer, 5)
    composer = ChainComposer(model, tokenizer, RELATIONS, beam=1, max_span=2)
    chain = ("father", "son", "brother", "mother")
    answer = composer.compose(chain)
    assert len(answer.relations) >= 1 and answer.relations[0] in _reference(chain, model, 2)
    with pytest.raises(ValueError, match="beam must be at least 1"):
        ChainComposer(model, tokenizer, RELATIONS, beam=0)
    with pytest.raises(ValueError, match="max_span must be at least 2"):
        ChainComposer(model, tokenizer, RELATIONS, max_span=1)
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
