"""LTLRandom35 (DeepLTL's "ltl-35") and its variants, regenerated with the package's logic engine.

Configurations (defaults in :data:`CONFIGS`):

* ``ltl-35``: 1M formulas of tree size <= 35 over 5 symbols, split 80/10/10; ``ltl-35-10sym`` the
  same over 10 symbols.
* ``ltl-35-supp``: ``ltl-35`` plus samples over 0 and 1 symbols in the training split.
* ``ltl-35-renamed``: ``ltl-35`` with the paper's perturbation (symbols renamed so that they
  first appear in the trace in the order a, b, c, ...).
* ``ltl-35-reduced``: ``ltl-35`` with the training split cut to its first 8% (80k of 1M).
* ``ltl-heatmap``: the evaluation grid, symbol count 0..10 x size 1..50, <= 100 samples per cell,
  symbols compacted to a, b, ....

Formulas are random trees with Spot's ``randltl`` algorithm and DeepLTL's priorities (false, true,
not, X, U, and = 1; the others 0) with Spot's trivial identities applied while building; the
trace is a satisfying symbolic lasso found by the engine's solver (minimised), verified by the
exact checker (language inclusion) before it is written. Unsatisfiable formulas and time-outs are
dropped, as in DeepLTL.

Determinism: the samples depend only on the parameters (not on the number of workers): every
candidate's randomness comes from ``(seed, configuration, index)`` and the engine's solver result
is a function of the formula alone (not of its caches or the process). The one exception is
the solver's time-out, which is wall-clock time: a formula near the limit may time out on a busy
machine and not on another. The default limit (10 s) is far above what the formulas of these
configurations take (milliseconds), so in practice nothing times out.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

import datasets

from hf_symbolinv.logic import (
    Formula,
    Trace,
    check_ltl,
    format_ltl,
    format_trace,
    parse_ltl,
    parse_trace,
    random_ltl_formula,
    solve_ltl,
)

from .logic_tasks import LogicTask, build_random35, random35_configs
from .params import DEFAULT_TIMEOUT, BuildOptions, ConfigSpec

__all__ = ["CONFIGS", "LTL_TASK", "build_ltl_random35"]


def _draw(rng: random.Random, size: int, names: Sequence[str]) -> Formula:
    return random_ltl_formula(rng, size, list(names), simplify=True)


def _solve(formula: Formula, timeout: float | None) -> tuple[str, Trace | None]:
    result = solve_ltl(formula, timeout=timeout)
    return (result.status, result.trace) if result.sat else (result.status, None)


def _check(formula: Formula, trace: Trace, timeout: float | None) -> str:
    return check_ltl(formula, trace, timeout=timeout).value


def _format_formula(formula: Formula) -> str:
    return format_ltl(formula)


def _parse_formula(text: str) -> Formula:
    return parse_ltl(text)


def _format_trace(trace: Trace) -> str:
    return format_trace(trace)


def _parse_trace(text: str) -> Trace:
    return parse_trace(text)


LTL_TASK = LogicTask(
    name="ltl",
    draw=_draw,
    format_formula=_format_formula,
    parse_formula=_parse_formula,
    solve=_solve,
    check=_check,
    format_target=_format_trace,
    parse_target=_parse_trace,
    drop_reasons=("unsat", "timeout"),
    min_symbols=0,
    target_name="trace",
    default_timeout=DEFAULT_TIMEOUT,
)

_ABOUT = """\
Formulas: random trees drawn with the algorithm of Spot's `randltl` (which DeepLTL used), with
DeepLTL's priorities false = true = not = X = U = and = 1 (F, G, <->, ->, xor, R, W, M, or = 0),
the symbol priority equal to the number of symbols, and Spot's trivial identities (`!!f = f`,
`f & 1 = f`, `X 1 = 1`, `0 U f = f`, ...) applied while building, so the final size may be below
the drawn one. Target (`target`): a satisfying symbolic lasso in the model vocabulary, e.g.
`a;&ab;{b}` (steps separated by `;`, the repeating part in braces), found by the package's LTL
solver (a tableau automaton and an accepting-cycle search, then greedy minimisation of the lasso),
and verified with the package's exact checker: every concrete word the lasso describes satisfies
the formula (language inclusion). Unsatisfiable formulas and time-outs are dropped, as DeepLTL
did."""

CONFIGS: dict[str, ConfigSpec] = random35_configs(
    "ltl",
    {
        "35": "LTLRandom35: LTL formulas of size <= 35 over 5 symbols with a satisfying trace "
        "(DeepLTL's ltl-35), split 80/10/10.",
        "35-10sym": "LTLRandom35 over 10 symbols (the full-vocabulary baseline's data), split 80/10/10.",
        "35-supp": "LTLRandom35 with samples over 0 and 1 symbols added to the training split (the paper's "
        "App. F, addressing their under-representation).",
        "35-renamed": "LTLRandom35, perturbed: symbols renamed so that their first appearances in the trace are "
        "a, b, c, ... (Isik et al., dataset perturbation).",
        "35-reduced": "LTLRandom35 with the training split reduced to its first 80k samples (of 1M).",
        "small": "Small formulas that a CPU can learn: size <= 20 over at most 3 symbols, the operators and targets "
        "of ltl-35 (a satisfying trace), split 80/10/10.",
        "small-8sym": "Formulas of ltl-small's sizes (<= 20) over up to 8 symbols, for testing only (one test split): "
        "symbol counts that ltl-small never trains on.",
        "heatmap": "LTL evaluation grid: symbol count 0..10 x formula size 1..50, at most 100 samples per "
        "cell, symbols compacted to a, b, c, ....",
    },
)


def build_ltl_random35(
    config: str = "ltl-35", out_dir: str | os.PathLike | None = None, options: BuildOptions | None = None
) -> datasets.DatasetDict:
    """Build an LTL configuration as ``options`` ask (default: its parameters) and return it as a ``DatasetDict``.

    With ``out_dir`` the dataset is also written there (Parquet shards and a dataset card, the
    layout ``load_dataset(out_dir)`` reads) and an interrupted build resumes where it stopped when
    rerun with the same parameters; a dataset of other parameters there (finished or interrupted)
    is refused unless ``options.overwrite``, and a folder another build is writing is refused at once
    (:class:`~dataset_builders.errors.OutputInUseError`). ``num_samples`` is the total before splitting (for
    ``ltl-heatmap``: the cap per cell); ``timeout`` the solver's per formula (default :data:`DEFAULT_TIMEOUT`).
    """
    return build_random35(LTL_TASK, CONFIGS, _ABOUT, config, out_dir, options)
