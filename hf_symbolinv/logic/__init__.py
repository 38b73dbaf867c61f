"""Pure-Python logic engine of hf_symbolinv (no torch anywhere in this package).

* Formulas and traces: :mod:`.formula` (AST), :mod:`.notation` (the one module that knows the
  Polish and infix spellings: parsing, printing, :class:`LogicSyntaxError`).
* LTL: :func:`check_ltl` (exact: every word of a symbolic lasso satisfies the formula) and
  :func:`solve_ltl` (a satisfying lasso, unsat, or time-out; ``max_work`` for a deterministic
  budget), in :mod:`.ltl`.
* Propositional: :func:`check_assignment` and :func:`solve_prop` (the canonical minimal partial
  assignment), on truth tables and py-aiger / py-aiger-sat, in :mod:`.prop`.
* Results and formula hashes do not depend on the process (``PYTHONHASHSEED``) or on caches, so
  formulas and traces pickle across processes.
* Random formulas with the DeepLTL distribution and the per-size gate: :mod:`.random_formulas`.
* Size, symbols, renaming, compaction, ``exact`` comparison: :mod:`.helpers`.
* Optional Spot backend: :mod:`.spot_backend` (``backend="spot"``).
"""

from .formula import (
    FALSE,
    TRUE,
    And,
    Assignment,
    Atom,
    Const,
    Equiv,
    Formula,
    Next,
    Not,
    Or,
    Trace,
    Until,
    Xor,
    conjunction,
    eventually,
    globally,
    implies,
    in_ltl_core,
    is_temporal_free,
    release,
    strong_release,
    weak_until,
)
from .helpers import (
    COMMUTATIVE_OPERATORS,
    canonical_commutative,
    commute_operands,
    compact,
    compact_mapping,
    formula_size,
    formulas_equal_up_to_commutativity,
    rename,
    rename_assignment,
    rename_formula,
    rename_trace,
    symbols_of,
    traces_equal_up_to_commutativity,
)
from .ltl import (
    MAX_LTL_DEPTH,
    LTLSolveResult,
    Verdict,
    check_ltl,
    check_ltl_depth,
    clear_caches,
    simplify_trace,
    solve_ltl,
)
from .notation import (
    NOTATIONS,
    LogicSyntaxError,
    format_assignment,
    format_formula,
    format_ltl,
    format_prop,
    format_trace,
    parse_assignment,
    parse_ltl,
    parse_prop,
    parse_trace,
    polish_tokens,
)
from .prop import PropSolveResult, check_assignment, clear_prop_caches, evaluate_prop, solve_prop
from .random_formulas import (
    LTL_PRIORITIES,
    PROP_PRIORITIES,
    SizeGate,
    random_ltl_formula,
    random_prop_formula,
    random_prop_formula_of_at_least,
)
from .spot_backend import spot_available

__all__ = [
    # formulas and traces
    "Formula",
    "Const",
    "Atom",
    "Not",
    "Next",
    "And",
    "Or",
    "Until",
    "Equiv",
    "Xor",
    "TRUE",
    "FALSE",
    "Trace",
    "Assignment",
    "conjunction",
    "eventually",
    "globally",
    "implies",
    "release",
    "weak_until",
    "strong_release",
    "is_temporal_free",
    "in_ltl_core",
    # notation
    "NOTATIONS",
    "LogicSyntaxError",
    "parse_ltl",
    "format_ltl",
    "parse_trace",
    "polish_tokens",
    "format_trace",
    "parse_prop",
    "format_prop",
    "format_formula",
    "parse_assignment",
    "format_assignment",
    # helpers
    "formula_size",
    "symbols_of",
    "rename",
    "rename_formula",
    "rename_trace",
    "rename_assignment",
    "compact",
    "compact_mapping",
    "canonical_commutative",
    "COMMUTATIVE_OPERATORS",
    "commute_operands",
    "formulas_equal_up_to_commutativity",
    "traces_equal_up_to_commutativity",
    # LTL
    "Verdict",
    "LTLSolveResult",
    "check_ltl",
    "check_ltl_depth",
    "MAX_LTL_DEPTH",
    "solve_ltl",
    "simplify_trace",
    "clear_caches",
    # propositional
    "PropSolveResult",
    "check_assignment",
    "solve_prop",
    "evaluate_prop",
    "clear_prop_caches",
    # random formulas
    "LTL_PRIORITIES",
    "PROP_PRIORITIES",
    "random_ltl_formula",
    "random_prop_formula",
    "random_prop_formula_of_at_least",
    "SizeGate",
    # backends
    "spot_available",
]
