"""Build parameters: the configurations' specs and the options a build resolves them with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .output import LETTERS


# ---------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfigSpec:
    """One named configuration: what it is and its default parameters.

    ``variant`` is ``base`` (generated and split 80/10/10), ``supp``, ``renamed``, ``reduced``
    (derived from the ``base`` configuration ``base``), ``test`` (generated as ``base``, every sample in
    one ``test`` split) or ``grid`` (one ``test`` split; for grids ``num_samples`` is the cap per cell).
    """

    name: str
    family: str
    variant: str
    description: str
    num_samples: int
    num_symbols: int
    max_size: int
    min_size: int = 1
    base: str | None = None

    @property
    def is_grid(self) -> bool:
        return self.variant == "grid"


@dataclass(frozen=True)
class BuildParams:
    """The resolved parameters of one build (defaults filled in)."""

    config: str
    num_samples: int
    num_symbols: int
    max_size: int
    seed: int
    min_size: int = 1
    timeout: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def resolve_params(
    spec: ConfigSpec,
    num_samples: int | None,
    num_symbols: int | None,
    max_size: int | None,
    seed: int,
    timeout: float | None = None,
) -> BuildParams:
    params = BuildParams(
        config=spec.name,
        num_samples=spec.num_samples if num_samples is None else num_samples,
        num_symbols=spec.num_symbols if num_symbols is None else num_symbols,
        max_size=spec.max_size if max_size is None else max_size,
        seed=seed,
        min_size=spec.min_size,
        timeout=timeout,
    )
    if params.num_samples < 1:
        raise ValueError(f"--num-samples must be at least 1, got {params.num_samples}")
    if not 0 <= params.num_symbols <= len(LETTERS):
        raise ValueError(f"--num-symbols must be between 0 and {len(LETTERS)}, got {params.num_symbols}")
    if params.max_size < params.min_size:
        raise ValueError(f"--max-size must be at least {params.min_size} for {spec.name}, got {params.max_size}")
    return params


DEFAULT_TIMEOUT = 10.0  # seconds per solve, wall clock; DeepLTL's default time-out
#: ``supp``: samples over 0 and 1 symbols added to the training split, as shares of it: the paper
#: (App. F) raised the 0-symbol samples by 202 and the 1-symbol samples by 10,839 in 800k.
SUPP_SHARES = {0: 202 / 800_000, 1: 10_839 / 800_000}
REDUCED_SHARE = 80_000 / 1_000_000  # ``reduced``: the first 80k training samples of 1M
# Draws aimed at each grid cell: 200 x cap + 50. At size 50 only ~1 draw in 1000 keeps its size
# (the trivial identities shrink the rest), so rare cells need many; cells rarer still stay sparse.
GRID_ATTEMPTS_PER_SAMPLE, GRID_ATTEMPTS_EXTRA = 200, 50
