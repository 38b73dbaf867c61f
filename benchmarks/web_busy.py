"""A quick request's answer time on the web demo while three slow ones run: the figure behind "a quick request is
answered within a second or two whatever else is queued".

    python benchmarks/web_busy.py --label after                      # this checkout
    PYTHONPATH=/path/to/older/checkout python benchmarks/web_busy.py --label before

The page's backend (`DemoBackend`, what `symbolinv web` serves; Gradio runs each request of its queue on a thread of
its own, as here) is first warmed up as `symbolinv web` does once its page is up (nothing timed). Then three threads
each ask for the 5 answers to a slow LTL formula (one the exact solver cannot decide within seconds: random formulas
of 80-150 nodes over 10 symbols, found by drawing), and while they run the quick formula `U a b` is answered
`--quick` times in a row, each timed from the call to its answer. It prints and records (in
`benchmarks/results/web_busy/results.json` under `--label`, and `RESULTS.md`) the quick answer times, the slow
requests' times and outcomes, the server process's peak memory and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from labelled_runs import machine, record_run, write_results_table

OUT = Path(__file__).resolve().parent / "results" / "web_busy"
QUICK = "U a b"
#: LTL formulas the exact solver cannot decide within 4 s (Polish, the dataset's letters).
SLOW = [
    "!X!U&XX!!!&XX&XU!X&fXX&!!XbhXUU!UbX!j&icU!!ja!aX&&Xah&ci&U1UfeXUXbXj!!&Xf!!&X!fh",
    "!XUUXX&X!&XiXXfUceX&XXX!b!gX!X&&U!UX!0fXhX!X0XU!!XU0!XhX&X&X!!U!g!UXXU1hXXX!gXUa&U!h!b!UXaUcgU&&!U&g!fXdU!XUaX1fe"
    "XU!Uc1!X!X!!!X&d!!0",
    "!XUUU&1X!a&!U&U!bXXX0&gfbXUcX&bd&!!U!X&dihX&X!!&Xh&!Xj&&1e&XXhX!!!b&X&!X!XUa1XXXUji&i!XgX!XUX&!&!!U!1!U!i0&!X!1c!&"
    "ifXX&&XUXgi!&!!bi&!&eU&ii!Xh!UUe!0i",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="the name of this run in results.json (e.g. before, after)")
    parser.add_argument("--quick", type=int, default=8, help="quick requests timed while the slow ones run")
    args = parser.parse_args()
    import hf_symbolinv
    from hf_symbolinv.utils.threads import set_torch_threads
    from hf_symbolinv.web.backend import DemoBackend

    set_torch_threads(1)  # as `symbolinv web` does
    backend = DemoBackend()
    started = time.perf_counter()
    backend.warm_up()  # what `symbolinv web` does in the background once the page is up
    print(f"warm-up (models loading): {time.perf_counter() - started:.2f} s", flush=True)
    alone_times = []
    for _ in range(3):
        started = time.perf_counter()
        backend.answer(QUICK, top_n=3)
        alone_times.append(time.perf_counter() - started)
    alone = statistics.median(alone_times)
    print(f"quick request alone (median of 3): {alone:.3f} s", flush=True)

    slow_results: list[tuple[float, str]] = []

    def slow(text: str) -> None:
        begun = time.perf_counter()
        try:
            view = backend.answer(text, top_n=5)
            outcome = f"answered ({view.solution.satisfiable=})"
        except Exception as error:  # a time-out or a refusal is an outcome here
            outcome = f"{type(error).__name__}: {str(error)[:120]}"
        slow_results.append((time.perf_counter() - begun, outcome))

    threads = [threading.Thread(target=slow, args=(text,), daemon=True) for text in SLOW]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    quick_times = []  # (seconds, slow requests running when it was sent)
    for _ in range(args.quick):
        running = sum(t.is_alive() for t in threads)
        begun = time.perf_counter()
        backend.answer(QUICK, top_n=3)
        quick_times.append((time.perf_counter() - begun, running))
        print(f"quick request sent beside {running} slow: {quick_times[-1][0]:.3f} s", flush=True)
    beside_three = [t for t, running in quick_times if running == len(SLOW)] or [float("nan")]
    for thread in threads:
        thread.join(timeout=120)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the server process (its children apart)
    record = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "package": str(Path(hf_symbolinv.__file__).parent),
        "machine": machine(),
        "quick_alone_s": round(alone, 3),
        "quick_s_and_slow_running": [[round(t, 3), running] for t, running in quick_times],
        "quick_beside_3_slow_count": sum(running == len(SLOW) for _, running in quick_times),
        "quick_beside_3_slow_median_s": round(statistics.median(beside_three), 3),
        "quick_beside_3_slow_max_s": round(max(beside_three), 3),
        "slow": [{"seconds": round(t, 2), "outcome": o} for t, o in slow_results],
        "slow_still_running_after_120_s": sum(t.is_alive() for t in threads),
        "peak_memory_mb": round(peak_mb),
    }
    print(json.dumps(record, indent=1))
    results = record_run(OUT, args.label, record)
    lines = [
        "# A quick request beside three slow ones (benchmarks/web_busy.py)",
        "",
        f"Quick request `{QUICK}` (3 answers), timed {args.quick} times while three slow LTL requests (5 answers "
        "each) run on the page's backend.",
        "",
        "| run | machine | quick alone, median of 3 (s) | quick sent beside 3 slow: count, median / max (s) | all "
        "quick (s, slow running) | slow requests (s, outcome) | peak memory (MB) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, r in results.items():
        slow_text = "; ".join(f"{s['seconds']} ({s['outcome'].split(':')[0]})" for s in r["slow"]) or "-"
        lines.append(
            f"| {label} ({r['when']}) | {r['machine']} | {r['quick_alone_s']} | {r['quick_beside_3_slow_count']}, "
            f"{r['quick_beside_3_slow_median_s']} / {r['quick_beside_3_slow_max_s']} | "
            f"{', '.join(f'{t} ({n})' for t, n in r['quick_s_and_slow_running'])} | {slow_text} | "
            f"{r['peak_memory_mb']} |"
        )
    write_results_table(OUT, lines)
    sys.stdout.flush()
    os._exit(0)  # threads of the old backend may still be running past their time limit


if __name__ == "__main__":
    main()
