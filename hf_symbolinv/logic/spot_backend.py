"""Optional Spot backend (used only when ``import spot`` succeeds).

Decides trace checks the way the reference evaluation did,
``spot.contains(spot.translate(f), spot.parse_word(t).as_automaton())``, and finds traces with
``translate(f).accepting_run()``. Symbols are renamed to ``p0, p1, ...`` on the way in (so any
configured name is safe for Spot's parser) and back on the way out. Spot's C++ cannot be
interrupted, so with a time-out the call runs in a forked child process that is killed when the
budget is spent.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

from .formula import Formula, Trace
from .helpers import rename_formula, rename_trace, symbols_of
from .ltl_core import LTLSolveResult, Verdict
from .notation import format_formula, format_trace, parse_trace

__all__ = ["spot_available", "spot_check_ltl", "spot_solve_ltl", "run_with_timeout"]


def spot_available() -> bool:
    try:
        import spot  # noqa: F401
    except ImportError:
        return False
    return True


def _child(conn: Any, fn: Callable[..., Any], args: tuple) -> None:
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as err:  # report anything to the parent
        conn.send(("error", repr(err)))
    finally:
        conn.close()


def run_with_timeout(fn: Callable[..., Any], args: tuple, timeout: float | None) -> tuple[bool, Any]:
    """``(True, fn(*args))``, or ``(False, None)`` when ``timeout`` seconds pass first.

    Without a time-out ``fn`` runs in this process; with one it runs in a forked child (``fn`` and
    its result must be picklable or plain data).
    """
    if timeout is None:
        return True, fn(*args)
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            return False, None
        status, value = parent.recv()
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        parent.close()
    if status != "ok":
        raise RuntimeError(f"spot backend failed: {value}")
    return True, value


def _safe_names(*objects: Formula | Trace) -> dict[str, str]:
    order: dict[str, None] = {}
    for obj in objects:
        for name in symbols_of(obj):
            order.setdefault(name, None)
    return {name: f"p{k}" for k, name in enumerate(order)}


def _contains(formula_text: str, trace_text: str) -> bool:
    import spot

    word = spot.parse_word(trace_text)
    return bool(spot.contains(spot.translate(spot.formula(formula_text)), word.as_automaton()))


def _accepting_word(formula_text: str) -> str | None:
    import spot

    run = spot.translate(spot.formula(formula_text)).accepting_run()
    if run is None:
        return None
    word = spot.twa_word(run)
    word.simplify()
    return str(word)


def spot_check_ltl(formula: Formula, trace: Trace, timeout: float | None) -> Verdict:
    mapping = _safe_names(formula, trace)
    # Spot reads <-> and xor: the formula goes as it is, without the model vocabulary's rewriting.
    f_text = format_formula(rename_formula(formula, mapping), "infix", "file")  # type: ignore[arg-type]
    t_text = format_trace(rename_trace(trace, mapping), "infix", "file")  # type: ignore[arg-type]
    finished, holds = run_with_timeout(_contains, (f_text, t_text), timeout)
    if not finished:
        return Verdict.UNKNOWN
    return Verdict.HOLDS if holds else Verdict.FAILS


def spot_solve_ltl(formula: Formula, timeout: float | None) -> LTLSolveResult:
    mapping = _safe_names(formula)
    back = {v: k for k, v in mapping.items()}
    f_text = format_formula(rename_formula(formula, mapping), "infix", "file")  # type: ignore[arg-type]
    finished, word = run_with_timeout(_accepting_word, (f_text,), timeout)
    if not finished:
        return LTLSolveResult("timeout")
    if word is None:
        return LTLSolveResult("unsat")
    trace = parse_trace(word, "infix", symbols=list(back))
    return LTLSolveResult("sat", rename_trace(trace, back))  # type: ignore[arg-type]
