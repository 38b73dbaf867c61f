"""Time per answer of a shipped model with 1 thread and with torch's default, idle and beside busy processes.

    python benchmarks/speed/solve_threads.py                     # prop-small, 20 formulas, 0 and 2 busy processes
    python benchmarks/speed/solve_threads.py --model ltl-35 --busy 0 1 2

Small models answering one input at a time gain nothing from more threads, and on a busy machine the extra
threads spin against the other work; `symbolinv solve` therefore runs on one thread unless told otherwise
(`symbolinv --threads N`, or OMP_NUM_THREADS).
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import time

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

from hf_symbolinv import logic
from hf_symbolinv.pretrained import SHIPPED, shipped_model


def spin(stop: multiprocessing.Event) -> None:
    while not stop.is_set():
        pass


def formulas(task: str, count: int) -> list[str]:
    rng = random.Random(0)
    make = logic.random_prop_formula if task == "prop" else logic.random_ltl_formula
    return [logic.format_formula(make(rng, (5, 15), 3)) for _ in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="prop-small", choices=sorted(SHIPPED))
    parser.add_argument("--formulas", type=int, default=20)
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 2], help="busy processes beside the timing")
    args = parser.parse_args()
    folder = shipped_model(args.model)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, dtype=torch.float32).eval()
    pipe = pipeline("symbolic-generation", model=model, tokenizer=AutoTokenizer.from_pretrained(folder))
    inputs = formulas(SHIPPED[args.model], args.formulas)
    default_threads = torch.get_num_threads()
    print(f"{args.model}, {len(inputs)} formulas, beam 3, {multiprocessing.cpu_count()} cores")
    print("| busy processes | threads | ms per answer (median) |\n|---|---|---|")
    for busy in args.busy:
        stop = multiprocessing.Event()
        spinners = [multiprocessing.Process(target=spin, args=(stop,), daemon=True) for _ in range(busy)]
        for process in spinners:
            process.start()
        try:
            for threads in (default_threads, 1):
                torch.set_num_threads(threads)
                pipe(inputs[0], num_beams=3)  # warm-up
                times = []
                for text in inputs:
                    start = time.perf_counter()
                    pipe(text, num_beams=3)
                    times.append(time.perf_counter() - start)
                print(f"| {busy} | {threads} | {1000 * statistics.median(times):.0f} |", flush=True)
        finally:
            stop.set()
            for process in spinners:
                process.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
