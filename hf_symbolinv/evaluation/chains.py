"""Answering a family story by composing its chain a few facts at a time.

A model trained on chains of two and three facts answers those lengths but not longer ones (CLUTRR's
systematic-generalisation split). Asked only what it was trained on, it answers any length: the chain ``r1 .. rk``
from the query's first person to its second is cut into consecutive parts of at most ``max_span`` facts, each part
stands for the relation it composes to, and the model answers the short story of those relations (``a R1 b , b R2
c ? a c`` for two parts), until one relation is left. Which parts compose first matters (CLUTRR's answers follow
the rules its stories were expanded by, and a composition the training stories never hold is a guess), so every
way of cutting is weighed: a chart over the chain's spans keeps, for each span, the ``beam`` best relations with
the log-probability of their best derivation, and the answer is the whole chain's best (a Viterbi parse whose
grammar is the model's own answers to short stories). A chain of at most ``max_span`` facts is therefore also
answered by the model reading it whole, where that is the more likely derivation.

Each short story is asked once per composer (its first answer token's distribution over the relation words is
kept), so a chain of k facts costs a few batches of model calls at most. The people's names never reach the
model: the answers do not depend on them.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Spans of at most this many facts are asked whole: CLUTRR's training chains are 2 and 3 facts long.
DEFAULT_MAX_SPAN = 3
#: Short stories per model call.
BATCH_SIZE = 512


def short_story(relations: Sequence[str]) -> str:
    """The story of a chain of ``relations`` between people named ``a``, ``b``, ...: ``a R1 b , b R2 c ? a c``."""
    names = string.ascii_lowercase
    facts = " , ".join(f"{names[i]} {relation} {names[i + 1]}" for i, relation in enumerate(relations))
    return f"{facts} ? a {names[len(relations)]}"


@dataclass(frozen=True)
class ComposedAnswer:
    """The relations a chain composes to, best first, each with the log-probability of its best derivation, and the
    best one's derivation (``(wife (son grandmother))``: each bracket a short story the model answered)."""

    relations: list[str]
    scores: list[float]
    derivation: str


class ChainComposer:
    """Composes chains of relation words with ``model`` (a seq2seq model answering a short story with one relation
    word), asking it stories of 2 to ``max_span`` facts and keeping the ``beam`` best relations of every span."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        relations: Sequence[str],
        beam: int = 3,
        max_span: int = DEFAULT_MAX_SPAN,
    ) -> None:
        if beam < 1:
            raise ValueError(f"beam must be at least 1, got {beam}")
        if not 2 <= max_span <= len(string.ascii_lowercase) - 1:
            raise ValueError(f"max_span must be at least 2 (a span of one fact is that fact), got {max_span}")
        vocabulary = tokenizer.get_vocab()
        missing = [word for word in relations if word not in vocabulary]
        if missing:
            raise ValueError(f"the model's tokenizer has no token for the relation(s) {', '.join(missing)}")
        self.model, self.tokenizer = model, tokenizer
        self.relations = list(relations)
        self.ids = [vocabulary[word] for word in self.relations]
        self.beam, self.max_span = beam, max_span
        # A short story's relations -> its ``beam`` most likely answers (log-probability, relation), best first.
        self._answers: dict[tuple[str, ...], list[tuple[float, str]]] = {}

    def _ask(self, stories: set[tuple[str, ...]]) -> None:
        """Ask the model the short stories it has not answered yet, in batches."""
        import torch

        todo = sorted(story for story in stories if story not in self._answers)
        device = next(self.model.parameters()).device
        self.model.eval()
        for start in range(0, len(todo), BATCH_SIZE):
            batch = todo[start : start + BATCH_SIZE]
            encoded = self.tokenizer([short_story(story) for story in batch], padding=True, return_tensors="pt")
            encoded = {key: value.to(device) for key, value in encoded.items()}
            first = torch.full((len(batch), 1), self.model.config.decoder_start_token_id, device=device)
            with torch.no_grad():
                logits = self.model(**encoded, decoder_input_ids=first).logits[:, 0].float()
            scores = logits.log_softmax(-1)[:, torch.tensor(self.ids, device=device)].cpu()
            best = scores.topk(min(self.beam, len(self.relations)), dim=-1)
            for story, values, indices in zip(batch, best.values.tolist(), best.indices.tolist()):
                self._answers[story] = [(value, self.relations[index]) for value, index in zip(values, indices)]

    def compose(self, chain: Sequence[str]) -> ComposedAnswer:
        """The relations ``chain`` (relation words in chain order) composes to; ``ValueError`` for a word that is no
        relation or an empty chain."""
        unknown = [word for word in chain if word not in self.relations]
        if not chain or unknown:
            raise ValueError(f"cannot compose the chain {' '.join(chain)!r}: {'no facts' if not chain else unknown}")
        count = len(chain)
        # chart[(i, j)]: relation -> (score, derivation) of the span chain[i:j], its best derivations only.
        chart: dict[tuple[int, int], dict[str, tuple[float, str]]] = {
            (i, i + 1): {word: (0.0, word)} for i, word in enumerate(chain)
        }
        for width in range(2, count + 1):
            # Every way of cutting every span of this width into 2..max_span parts, and each part's best relations.
            derivations: list[tuple[tuple[int, int], tuple[tuple[str, tuple[float, str]], ...]]] = []
            for i in range(count - width + 1):
                j = i + width
                for parts in range(2, min(self.max_span, width) + 1):
                    for cuts in itertools.combinations(range(i + 1, j), parts - 1):
                        bounds = (i, *cuts, j)
                        options = [self._best(chart[span]) for span in zip(bounds, bounds[1:])]
                        derivations += [((i, j), combination) for combination in itertools.product(*options)]
            self._ask({tuple(relation for relation, _ in combination) for _, combination in derivations})
            for span, combination in derivations:
                cell = chart.setdefault(span, {})
                below = sum(score for _, (score, _) in combination)
                tree = "(" + " ".join(derivation for _, (_, derivation) in combination) + ")"
                for score, relation in self._answers[tuple(relation for relation, _ in combination)]:
                    total = below + score
                    if relation not in cell or total > cell[relation][0]:
                        cell[relation] = (total, tree)
        ranked = sorted(chart[(0, count)].items(), key=lambda item: -item[1][0])
        return ComposedAnswer(
            relations=[relation for relation, _ in ranked],
            scores=[score for _, (score, _) in ranked],
            derivation=ranked[0][1][1],
        )

    def _best(self, cell: dict[str, tuple[float, str]]) -> list[tuple[str, tuple[float, str]]]:
        return sorted(cell.items(), key=lambda item: -item[1][0])[: self.beam]


def compose_story(composer: ChainComposer, story: str, top_n: int = 1) -> list[str] | None:
    """The ``top_n`` relations a symbolic CLUTRR story's chain composes to, or None where the story holds no single
    chain from the query's first person to its second (such a story is read whole by the model instead)."""
    from ..tasks.clutrr import story_chain

    try:
        chain = story_chain(story)
    except ValueError:
        return None
    return composer.compose(chain).relations[: max(1, top_n)]


def composed_answers(
    model: Any,
    tokenizer: Any,
    sources: Sequence[str],
    beam: int = 3,
    top_n: int = 1,
    max_span: int = DEFAULT_MAX_SPAN,
) -> list[list[str]]:
    """The ``top_n`` answers to each symbolic CLUTRR story by composing its chain (see the module); a story without
    exactly one chain from the query's first person to its second is answered by the model reading it whole."""
    from ..tasks.clutrr import CLUTRR_RELATIONS
    from .seq2seq import generate_answers

    composer = ChainComposer(model, tokenizer, CLUTRR_RELATIONS, beam=max(beam, top_n), max_span=max_span)
    answers = [compose_story(composer, source, top_n) for source in sources]
    whole = [index for index, options in enumerate(answers) if options is None]
    if whole:
        read = generate_answers(
            model,
            tokenizer,
            [sources[index] for index in whole],
            num_beams=max(beam, top_n),
            num_return_sequences=max(1, top_n),
            max_new_tokens=4,
            progress=False,
        )
        for index, options in zip(whole, read):
            answers[index] = options
    return [options or [] for options in answers]
