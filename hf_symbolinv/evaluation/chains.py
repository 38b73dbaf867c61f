"""Answering a family story by composing its chain two facts at a time.

A model trained on chains of two and three facts composes those lengths but not longer ones (CLUTRR's
systematic-generalisation split). Asked only what it was trained on, two facts at a time, it answers any length:
the chain ``r1 .. rk`` from the query's first person to its second is reduced by composing neighbouring relations,
``(r1 r2) -> r``, until one relation is left. Which neighbours compose first matters (CLUTRR's answers follow the
rules its stories were expanded by, and a composition the training stories never hold is a guess), so every
bracketing is weighed: a chart over the chain's spans keeps, for each span, the ``beam`` best relations with the
log-probability of their best derivation, and the answer is the whole chain's best (a Viterbi parse whose grammar
is the model's own two-fact answers).

The model is asked each pair of relations once (``a R1 b , b R2 c ? a c``, 22 x 22 stories for CLUTRR's words) and
its first answer token's distribution over the relation words is kept; a chain of k facts then costs no model call.
The people's names never reach the model, so the answers do not depend on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The two-fact story each pair of relations is asked as.
PAIR_STORY = "a {first} b , b {second} c ? a c"


@dataclass(frozen=True)
class ComposedAnswer:
    """The relations a chain composes to, best first, each with the log-probability of its best derivation, and the
    best one's bracketing (``(wife (son grandmother))``)."""

    relations: list[str]
    scores: list[float]
    derivation: str


class ChainComposer:
    """Composes chains of relation words with ``model`` (a seq2seq model answering two-fact stories with one
    relation word), keeping the ``beam`` best relations of every span."""

    def __init__(self, model: Any, tokenizer: Any, relations: Sequence[str], beam: int = 3) -> None:
        if beam < 1:
            raise ValueError(f"beam must be at least 1, got {beam}")
        self.relations = list(relations)
        self.beam = beam
        self._table = self._pair_table(model, tokenizer)

    def _pair_table(self, model: Any, tokenizer: Any) -> dict[tuple[str, str], list[tuple[float, str]]]:
        """Each pair's ``beam`` most likely compositions (log-probability, relation), best first."""
        import torch

        vocabulary = tokenizer.get_vocab()
        missing = [word for word in self.relations if word not in vocabulary]
        if missing:
            raise ValueError(f"the model's tokenizer has no token for the relation(s) {', '.join(missing)}")
        ids = torch.tensor([vocabulary[word] for word in self.relations])
        pairs = [(first, second) for first in self.relations for second in self.relations]
        encoded = tokenizer(
            [PAIR_STORY.format(first=first, second=second) for first, second in pairs],
            padding=True,
            return_tensors="pt",
        )
        device = next(model.parameters()).device
        encoded = {key: value.to(device) for key, value in encoded.items()}
        start = torch.full((len(pairs), 1), model.config.decoder_start_token_id, device=device)
        model.eval()
        with torch.no_grad():
            logits = model(**encoded, decoder_input_ids=start).logits[:, 0].float()
        scores = logits.log_softmax(-1)[:, ids.to(device)].cpu()
        best = scores.topk(min(self.beam, len(self.relations)), dim=-1)
        return {
            pair: [(float(value), self.relations[int(index)]) for value, index in zip(values, indices)]
            for pair, values, indices in zip(pairs, best.values, best.indices)
        }

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
            for i in range(count - width + 1):
                j = i + width
                cell: dict[str, tuple[float, str]] = {}
                for middle in range(i + 1, j):
                    for left, (left_score, left_tree) in self._best(chart[(i, middle)]):
                        for right, (right_score, right_tree) in self._best(chart[(middle, j)]):
                            for score, relation in self._table[(left, right)]:
                                total = left_score + right_score + score
                                if relation not in cell or total > cell[relation][0]:
                                    cell[relation] = (total, f"({left_tree} {right_tree})")
                chart[(i, j)] = cell
        ranked = sorted(chart[(0, count)].items(), key=lambda item: -item[1][0])
        return ComposedAnswer(
            relations=[relation for relation, _ in ranked],
            scores=[score for _, (score, _) in ranked],
            derivation=ranked[0][1][1],
        )

    def _best(self, cell: dict[str, tuple[float, str]]) -> list[tuple[str, tuple[float, str]]]:
        return sorted(cell.items(), key=lambda item: -item[1][0])[: self.beam]


def composed_answers(
    model: Any, tokenizer: Any, sources: Sequence[str], beam: int = 3, top_n: int = 1
) -> list[list[str]]:
    """The ``top_n`` answers to each symbolic CLUTRR story by composing its chain (see the module); a story without
    exactly one chain from the query's first person to its second is answered by the model reading it whole."""
    from ..tasks.clutrr import CLUTRR_RELATIONS, story_chain
    from .seq2seq import generate_answers

    composer = ChainComposer(model, tokenizer, CLUTRR_RELATIONS, beam=max(beam, top_n))
    answers: list[list[str] | None] = []
    whole: list[int] = []
    for index, source in enumerate(sources):
        try:
            chain = story_chain(source)
        except ValueError:
            answers.append(None)
            whole.append(index)
            continue
        answers.append(composer.compose(chain).relations[: max(1, top_n)])
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
