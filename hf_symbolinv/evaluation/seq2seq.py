"""Evaluation as in the papers: semantic correctness by the checkers, exact match, invalid and unknown
answers, top-N accuracy, alpha-covariance per symbol count, heatmaps over (symbols × length), and
the copy task's edit distance.

Judging is plain logic (``hf_symbolinv.logic``); generation takes any model of the family.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..tasks import Judgement, get_task
from ..utils.files import write_atomic, write_text_atomic
from ..utils.metrics import alpha_covariance_by_renaming


# ---------------------------------------------------------------------------------------------------
# Judging one answer
# ---------------------------------------------------------------------------------------------------
def judge(
    task: str, source: str, prediction: str, reference: str | None = None, timeout: float | None = 10.0
) -> Judgement:
    """Judge ``prediction`` for the input ``source`` by the task's checker (``reference``: the dataset's
    answer, for ``exact``). See ``hf_symbolinv.tasks``."""
    return get_task(task).judge(source, prediction, reference, timeout)


def input_size(task: str, source: str) -> int:
    """The heatmap's length axis: formula size for the logic tasks, string length for copy."""
    return get_task(task).input_size(source)


# ---------------------------------------------------------------------------------------------------
# Generating answers
# ---------------------------------------------------------------------------------------------------
@torch.no_grad()
def generate_answers(
    model: Any,
    tokenizer: Any,
    sources: Sequence[str],
    num_beams: int = 3,
    num_return_sequences: int = 1,
    batch_size: int = 64,
    max_new_tokens: int | Callable[[list[str]], int] = 128,
    progress: bool = True,
    desc: str = "generating",
    group: bool = True,
) -> list[list[str]]:
    """``num_return_sequences`` answers per input, decoded in the input's own symbol names.

    Inputs are batched by (distinct symbols, length): a batch costs as many streams as its input
    with the most symbols, so grouping keeps batches cheap (``group=False`` keeps the input order, to measure
    what grouping saves). Answers come back in input order.
    ``max_new_tokens`` may be a function of the batch's inputs (a copy is as long as its input).
    Raises the model's ValueError when it cannot run an input (a fixed-embedding model given a
    symbol it has no row for).
    """
    from tqdm.auto import tqdm

    from ..utils.progress import show_progress

    model.eval()
    device = next(model.parameters()).device
    encoded_all = tokenizer(list(sources))["input_ids"]
    num_base = tokenizer.num_base_tokens
    order = sorted(
        range(len(sources)),
        key=lambda i: (len({t for t in encoded_all[i] if t >= num_base}), len(encoded_all[i])) if group else 0,
    )
    answers: list[list[str]] = [[] for _ in sources]
    beams = max(num_beams, num_return_sequences)
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    # Off a terminal, no bar: in a log file each update would be a line.
    for batch in tqdm(batches, desc=desc, unit="batch", disable=not show_progress(progress), leave=False):
        texts = [sources[i] for i in batch]
        encoded = tokenizer(texts, padding=True, return_tensors="pt", return_symbol_names=True)
        names = encoded.pop("symbol_names")
        encoded = {key: value.to(device) for key, value in encoded.items()}
        limit = max_new_tokens(texts) if callable(max_new_tokens) else max_new_tokens
        output = model.generate(
            **encoded, num_beams=beams, num_return_sequences=num_return_sequences, max_new_tokens=limit, do_sample=False
        )
        rows = output.tolist()
        for position, index in enumerate(batch):
            start = position * num_return_sequences
            answers[index] = [
                tokenizer.decode(row, skip_special_tokens=True, symbol_names=names[position])
                for row in rows[start : start + num_return_sequences]
            ]
    return answers


# ---------------------------------------------------------------------------------------------------
# Alpha-covariance (paper Eq. 2)
# ---------------------------------------------------------------------------------------------------
def slot_renamings(
    used: Sequence[int], pool: Sequence[int], max_variants: int, rng: random.Random
) -> list[dict[int, int]]:
    """Distinct injective renamings of the ``used`` slots into ``pool`` (the identity first): all of them
    when there are at most ``max_variants``, else ``max_variants`` drawn at random."""
    used = list(used)
    count = math.perm(len(pool), len(used))
    identity = {s: s for s in used}
    if count <= max_variants:
        from itertools import permutations

        found = [dict(zip(used, image)) for image in permutations(pool, len(used))]
        found.sort(key=lambda m: m != identity)
        return found
    found = [identity]
    seen = {tuple(identity[s] for s in used)}
    while len(found) < max_variants:
        image = tuple(rng.sample(list(pool), len(used)))
        if image not in seen:
            seen.add(image)
            found.append(dict(zip(used, image)))
    return found


def alpha_covariance_of(
    predict: Callable[[list[list[int]]], list[list[int]]],
    inputs: Sequence[Sequence[int]],
    num_base_tokens: int,
    pool: Sequence[int],
    max_variants: int = 120,
    seed: int = 0,
) -> list[float]:
    """Alpha-covariance of each input (token ids), renaming its symbol slots into ``pool``.

    ``predict`` maps a list of id sequences to answers (id sequences). Each variant's answer is
    mapped back with the inverse of that variant's own renaming, so the measure is exactly Eq. 2
    whatever the model does (a non-invariant model scores below 1).
    """
    rng = random.Random(seed)

    def renamings_of(ids: Sequence[int]) -> list[dict[int, int]]:
        used = sorted({t - num_base_tokens for t in ids if t >= num_base_tokens})
        return slot_renamings(used, pool, max_variants, rng)

    def rename(ids: Sequence[int], mapping: dict[int, int]) -> list[int]:
        return [
            num_base_tokens + mapping.get(t - num_base_tokens, t - num_base_tokens) if t >= num_base_tokens else t
            for t in ids
        ]

    def undo(answer: Sequence[int], mapping: dict[int, int]) -> tuple[int, ...]:
        inverse = {new: old for old, new in mapping.items()}
        # A symbol outside the renamed slots cannot be mapped back: it gets a value no real answer has.
        return tuple(
            num_base_tokens + inverse.get(t - num_base_tokens, -1 - t) if t >= num_base_tokens else t for t in answer
        )

    scores = alpha_covariance_by_renaming(predict, inputs, renamings_of, rename, undo)
    return [1.0 if score is None else score for score in scores]


def model_predictor(
    model: Any,
    num_beams: int = 3,
    batch_size: int = 64,
    max_new_tokens: int = 128,
    pad_token_id: int = 0,
    eos_token_id: int = 1,
) -> Callable[[list[list[int]]], list[list[int]]]:
    """``predict`` for :func:`alpha_covariance_of`: greedy or beam answers of a model, as id lists
    cut at the first EOS."""
    device = next(model.parameters()).device

    @torch.no_grad()
    def predict(inputs: list[list[int]]) -> list[list[int]]:
        model.eval()
        out: list[list[int]] = []
        for start in range(0, len(inputs), batch_size):
            chunk = inputs[start : start + batch_size]
            longest = max(len(x) for x in chunk)
            ids = torch.full((len(chunk), longest), pad_token_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, x in enumerate(chunk):
                ids[row, : len(x)] = torch.tensor(x)
                mask[row, : len(x)] = 1
            generated = model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                num_beams=num_beams,
                max_new_tokens=max_new_tokens,
                do_sample=False,
            )
            for row in generated.tolist():
                answer = row[1:]
                if eos_token_id in answer:
                    answer = answer[: answer.index(eos_token_id)]
                out.append(answer)
        return out

    return predict


# ---------------------------------------------------------------------------------------------------
# Whole-dataset evaluation
# ---------------------------------------------------------------------------------------------------
@dataclass
class EvaluationReport:
    task: str
    count: int
    correct: float
    exact: float
    invalid: float
    unknown: float
    top_n: dict[int, float] = field(default_factory=dict)
    mean_edit_distance: float | None = None
    alpha_covariance: dict[int, float] = field(default_factory=dict)
    heatmap: dict[str, dict[str, float]] = field(default_factory=dict)  # symbols -> size -> accuracy
    heatmap_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    by_symbols: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def summary_lines(self) -> list[str]:
        lines = [
            f"task {self.task}: {self.count} samples",
            f"  correct  {100 * self.correct:6.2f}%   exact {100 * self.exact:6.2f}%   "
            f"invalid {100 * self.invalid:5.2f}%   unknown {100 * self.unknown:5.2f}%",
        ]
        for n, value in sorted(self.top_n.items()):
            lines.append(f"  top-{n} correct {100 * value:6.2f}%")
        if self.mean_edit_distance is not None:
            lines.append(f"  mean edit distance {self.mean_edit_distance:.3f}")
        for k, value in sorted(self.by_symbols.items()):
            lines.append(f"  {k:2d} symbols: correct {100 * value:6.2f}%")
        for k, value in sorted(self.alpha_covariance.items()):
            lines.append(f"  alpha-covariance, {k} symbols: {100 * value:6.2f}%")
        return lines


def evaluate_answers(
    task: str,
    sources: Sequence[str],
    answers: Sequence[Sequence[str]],
    references: Sequence[str | None] | None = None,
    num_symbols: Sequence[int] | None = None,
    sizes: Sequence[int] | None = None,
    timeout: float | None = 10.0,
) -> EvaluationReport:
    """Metrics of already generated answers (the first answer of each input is its prediction)."""
    get_task(task)  # an unknown task fails here, naming the known ones
    if len(answers) != len(sources) or not sources:
        raise ValueError(f"need one list of answers per input (>0 inputs), got {len(answers)} for {len(sources)}")
    references = list(references) if references is not None else [None] * len(sources)
    totals = defaultdict(int)
    top_n_hits = defaultdict(int)
    cells: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    per_symbols: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    distances = []
    width = max(len(a) for a in answers)
    for i, (source, candidates) in enumerate(zip(sources, answers)):
        try:
            judgements = [judge(task, source, a, references[i], timeout) for a in candidates] or [
                Judgement(correct=False, exact=False, invalid=True)
            ]
        except (ValueError, SyntaxError) as error:  # the input itself is bad (LogicSyntaxError...): say which one
            raise ValueError(f"input {i} ({source[:40]!r}): {error}") from None
        first = judgements[0]
        totals["correct"] += first.correct
        totals["exact"] += first.exact
        totals["invalid"] += first.invalid
        totals["unknown"] += first.unknown
        if first.edit_distance is not None:
            distances.append(first.edit_distance)
        for n in range(2, width + 1):
            top_n_hits[n] += any(j.correct for j in judgements[:n])
        k = num_symbols[i] if num_symbols is not None else len(_symbol_names(task, source))
        size = sizes[i] if sizes is not None else input_size(task, source)
        cells[(k, size)][0] += first.correct
        cells[(k, size)][1] += 1
        per_symbols[k][0] += first.correct
        per_symbols[k][1] += 1
    count = len(sources)
    heatmap: dict[str, dict[str, float]] = defaultdict(dict)
    heatmap_counts: dict[str, dict[str, int]] = defaultdict(dict)
    for (k, size), (hits, n) in sorted(cells.items()):
        heatmap[str(k)][str(size)] = hits / n
        heatmap_counts[str(k)][str(size)] = n
    return EvaluationReport(
        task=task,
        count=count,
        correct=totals["correct"] / count,
        exact=totals["exact"] / count,
        invalid=totals["invalid"] / count,
        unknown=totals["unknown"] / count,
        top_n={n: hits / count for n, hits in top_n_hits.items()},
        mean_edit_distance=sum(distances) / len(distances) if distances else None,
        heatmap=dict(heatmap),
        heatmap_counts=dict(heatmap_counts),
        by_symbols={k: hits / n for k, (hits, n) in sorted(per_symbols.items())},
    )


def _symbol_names(task: str, source: str) -> list[str]:
    return get_task(task).symbol_names(source)


def evaluate_model(
    model: Any,
    tokenizer: Any,
    task: str,
    sources: Sequence[str],
    references: Sequence[str] | None = None,
    num_symbols: Sequence[int] | None = None,
    sizes: Sequence[int] | None = None,
    num_beams: int = 3,
    top_n: int = 1,
    batch_size: int = 64,
    max_new_tokens: int = 128,
    alpha_symbol_counts: Iterable[int] = (3, 4, 5),
    alpha_pool: int = 5,
    max_perm: int = 120,
    alpha_samples: int = 100,
    seed: int = 0,
    progress: bool = True,
    answer: Callable[[list[str]], list[list[str]]] | None = None,
) -> EvaluationReport:
    """Generate and judge answers for ``sources``; alpha-covariance on up to ``alpha_samples`` inputs
    per symbol count, renaming their symbols into the first ``alpha_pool`` slots. New tokens stop at
    ``max_new_tokens``, or earlier at the task's :attr:`~hf_symbolinv.tasks.Task.answer_budget` for the batch.
    ``answer``: how the answers are made, when not by the model's generation (CLUTRR's chain composition); the
    alpha-covariance is always the model's own generation's."""
    budget = get_task(task).answer_budget
    answers = (
        answer(list(sources))
        if answer is not None
        else generate_answers(
            model,
            tokenizer,
            sources,
            num_beams=num_beams,
            num_return_sequences=max(1, top_n),
            batch_size=batch_size,
            max_new_tokens=(lambda texts: min(max_new_tokens, max(map(budget, texts)))) if budget else max_new_tokens,
            progress=progress,
        )
    )
    report = evaluate_answers(task, sources, answers, references, num_symbols, sizes)
    num_base = model.config.num_base_tokens
    predict = model_predictor(model, num_beams=num_beams, batch_size=batch_size, max_new_tokens=max_new_tokens)
    counts = num_symbols if num_symbols is not None else [len(_symbol_names(task, s)) for s in sources]
    for k in alpha_symbol_counts:
        if k > alpha_pool:
            continue
        chosen = [s for s, c in zip(sources, counts) if c == k][:alpha_samples]
        if not chosen:
            continue
        ids = [tokenizer(s)["input_ids"] for s in chosen]
        values = alpha_covariance_of(predict, ids, num_base, list(range(alpha_pool)), max_perm, seed)
        report.alpha_covariance[k] = sum(values) / len(values)
    return report


# ---------------------------------------------------------------------------------------------------
# Heatmaps
# ---------------------------------------------------------------------------------------------------
def plot_heatmap(
    path: str | Path,
    values: Sequence[Sequence[float | None]],
    row_labels: Sequence[object],
    column_labels: Sequence[object],
    title: str,
    xlabel: str,
    ylabel: str = "distinct symbols",
    training_box: tuple[tuple[int, int], tuple[int, int]] | None = None,
    annotate: bool = True,
) -> None:
    """An accuracy heatmap (values in [0, 1], None for empty cells) written atomically as a PNG.

    ``training_box`` = ((low row label, high row label), (low column label, high column label))
    outlines the cells that look like training data, so generalisation reads off the picture.
    """
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Rectangle

    grid = np.array([[math.nan if v is None else 100 * v for v in row] for row in values], dtype=float)
    figure, axes = plt.subplots(
        figsize=(
            1.0 + max(0.25, min(0.7, 14 / max(1, len(column_labels)))) * len(column_labels),
            1.2 + 0.45 * len(row_labels),
        )
    )
    image = axes.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=100, origin="lower", aspect="auto")
    axes.set_xticks(
        range(len(column_labels)), [str(c) for c in column_labels], fontsize=7 if len(column_labels) > 20 else None
    )
    axes.set_yticks(range(len(row_labels)), [str(r) for r in row_labels])
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=9)
    if annotate and len(column_labels) <= 20:
        for y, row in enumerate(grid):
            for x, value in enumerate(row):
                if not math.isnan(value):
                    axes.text(
                        x,
                        y,
                        f"{value:.0f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="black" if value > 60 else "white",
                    )
    if training_box is not None:
        (low_r, high_r), (low_c, high_c) = training_box
        inside_x = [i for i, c in enumerate(column_labels) if low_c <= c <= high_c]
        inside_y = [i for i, r in enumerate(row_labels) if low_r <= r <= high_r]
        if inside_x and inside_y:
            axes.add_patch(
                Rectangle(
                    (inside_x[0] - 0.5, inside_y[0] - 0.5),
                    inside_x[-1] - inside_x[0] + 1,
                    inside_y[-1] - inside_y[0] + 1,
                    fill=False,
                    edgecolor="red",
                    linestyle="--",
                    linewidth=1.5,
                    label="training range",
                )
            )
            axes.legend(loc="upper left", fontsize=7)
    figure.colorbar(image, ax=axes, label="accuracy (%)")
    figure.tight_layout()
    try:
        write_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    finally:
        plt.close(figure)


def save_heatmap(
    report: EvaluationReport,
    json_path: str | Path,
    png_path: str | Path | None = None,
    title: str | None = None,
    training_box: tuple[tuple[int, int], tuple[int, int]] | None = None,
) -> None:
    """Write the report's heatmap (accuracy per symbol count and size) as JSON and, optionally, a PNG."""
    data = {"task": report.task, "accuracy": report.heatmap, "counts": report.heatmap_counts}
    write_text_atomic(json_path, json.dumps(data, indent=1))
    if png_path is None:
        return
    rows = sorted(int(k) for k in report.heatmap)
    columns = sorted({int(s) for row in report.heatmap.values() for s in row})
    values = [[report.heatmap[str(k)].get(str(c)) for c in columns] for k in rows]
    plot_heatmap(
        png_path,
        values,
        rows,
        columns,
        title or f"{report.task}: accuracy (%)",
        xlabel="string length" if report.task == "copy" else "formula size",
        training_box=training_box,
    )
