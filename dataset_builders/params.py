"""Build parameters: the configurations' specs, the options a build is asked for (:class:`BuildOptions`) and the
parameters it resolves them to (:class:`BuildParams`, what a build's fingerprint records)."""

from __future__ import annotations

from collections.abc import Callable, Collection
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


#: The options that only some families use, and which: another family's builder refuses them.
FAMILY_OPTIONS = {"timeout": "the LTL configurations", "max_depth": "the tree configurations"}


@dataclass(frozen=True)
class BuildOptions:
    """What a build is asked for: every ``build_*`` function and :func:`dataset_builders.build` take one.

    ``num_samples``, ``num_symbols`` and ``max_size`` default to the configuration's (what each means per family:
    the family's ``build_*``); ``seed`` picks the random streams; ``workers`` the worker processes (default: all
    cores; the result does not depend on it). ``timeout`` (LTL only: seconds per solve, default
    :data:`DEFAULT_TIMEOUT`) and ``max_depth`` (the tree configurations only: the deepest node, default 8) are
    refused by the other families. ``progress`` shows a progress bar; ``overwrite`` replaces a dataset of other
    parameters in the output folder. ``on_accept`` (called with the count accepted so far) and ``chunk_size``
    (samples per committed chunk) are hooks for tests. An unknown field is a ``TypeError``, as for any dataclass.
    """

    num_samples: int | None = None
    num_symbols: int | None = None
    max_size: int | None = None
    seed: int = 0
    workers: int | None = None
    timeout: float | None = None
    max_depth: int | None = None
    progress: bool = True
    overwrite: bool = False
    on_accept: Callable[[int], None] | None = None
    chunk_size: int | None = None

    def refuse_unused(self, config: str, used: Collection[str] = ()) -> None:
        """Raise ``ValueError`` if a family-specific option other than ``used`` is set for ``config``."""
        for name, families in FAMILY_OPTIONS.items():
            if name not in used and getattr(self, name) is not None:
                raise ValueError(f"{name} applies to {families} only, not {config}")


def checked_options(options: BuildOptions | None) -> BuildOptions:
    """A builder's ``options`` argument: the defaults for ``None``; anything but a :class:`BuildOptions` (a dict of
    keyword arguments, say) is a ``TypeError``."""
    if options is None:
        return BuildOptions()
    if not isinstance(options, BuildOptions):
        raise TypeError(f"build options must be a BuildOptions, got {type(options).__name__}")
    return options


def resolve_params(spec: ConfigSpec, options: BuildOptions, timeout: float | None = None) -> BuildParams:
    """The parameters of a build of ``spec`` asked for by ``options`` (the configuration's defaults filled in);
    ``timeout`` is the one the family resolved (only the logic families have one)."""
    params = BuildParams(
        config=spec.name,
        num_samples=spec.num_samples if options.num_samples is None else options.num_samples,
        num_symbols=spec.num_symbols if options.num_symbols is None else options.num_symbols,
        max_size=spec.max_size if options.max_size is None else options.max_size,
        seed=options.seed,
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
