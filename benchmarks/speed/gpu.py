"""GPU figures of the SIT, against the paper's (Fig. 17 and §5) and against the fixed-embedding baseline.

Prints, in one run on a CUDA device:

1. generation time per sample against the number of symbols 1..10 on propositional inputs
   (``prop-best``, beam 3; paper Fig. 17: 3.38 -> 5.13 ms per sample on an L40S);
2. peak activation memory of a batch of 64 LTL inputs with 5 and with 10 symbols (``ltl-best``, forward +
   backward; paper: 1.9 -> 3.9 GB);
3. training samples per second of each SIT preset against its fixed-embedding baseline, in fp32 and
   under bf16 autocast.

    python benchmarks/speed/gpu.py                      # writes benchmarks/results/gpu_<device name>.txt
    python benchmarks/speed/gpu.py --device cpu --quick # checks the script itself on a CPU (figures not meaningful)

Without CUDA (and without ``--device cpu``) it exits with status 2 and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from streams import Batch, machine_lines, make_batch, peak_bytes, synchronize, to_device

from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration

RESULTS = Path(__file__).resolve().parent.parent / "results" / "speed_gpu"
PAPER_GENERATION_MS = {1: 3.38, 10: 5.13}
PAPER_MEMORY_GB = {5: 1.9, 10: 3.9}
TRAINING_PRESETS = (("ltl", "ltl-vanilla"), ("prop", "prop-vanilla"), ("ltl-best", "ltl-vanilla"))


def timed(job: Callable[[], None], device: torch.device, repeats: int) -> float:
    """Best wall-clock seconds of ``repeats`` runs after one warm-up."""
    job()
    synchronize(device)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        job()
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return best


@contextlib.contextmanager
def precision(device: torch.device, name: str) -> Iterator[None]:
    if name == "bf16":
        with torch.autocast(device.type, dtype=torch.bfloat16):
            yield
    else:
        yield


def batch_for(config: SymbolInvConfig, size: int, symbols: int, rng: random.Random, device: torch.device) -> Batch:
    lengths = [rng.randint(max(35, 2 * symbols + 1), 50) for _ in range(size)]
    # A fixed-embedding baseline has rows for its first num_symbol_embeddings slots only.
    slots = config.num_symbol_slots if config.embedding_type == "streams" else config.num_symbol_embeddings
    return to_device(make_batch(config, lengths, [symbols] * size, slots, 20, rng), device)


def generation_per_symbols(device: torch.device, args: argparse.Namespace, out: list[str]) -> None:
    config = SymbolInvConfig.from_preset("prop-best")
    model = SymbolInvForConditionalGeneration(config).to(device).eval()
    rng = random.Random(0)
    out += ["", f"1. generation, prop-best, batch {args.batch}, beam 3, 20 new tokens: ms per sample"]
    out.append("symbols  ms/sample  paper (L40S)")
    for symbols in range(1, 11):
        batch = batch_for(config, args.batch, symbols, rng, device)

        def generate(batch: Batch = batch) -> None:
            with torch.no_grad():
                model.generate(
                    input_ids=batch.input_ids,
                    attention_mask=batch.attention_mask,
                    num_beams=3,
                    max_new_tokens=20,
                    min_new_tokens=20,
                )

        seconds = timed(generate, device, args.repeats)
        paper = PAPER_GENERATION_MS.get(symbols)
        out.append(f"{symbols:7d}  {seconds / args.batch * 1000:9.2f}  {paper if paper else ''}")


def memory_per_symbols(device: torch.device, args: argparse.Namespace, out: list[str]) -> None:
    config = SymbolInvConfig.from_preset("ltl-best")
    model = SymbolInvForConditionalGeneration(config).to(device).train()
    rng = random.Random(1)
    out += ["", "2. peak activation memory, ltl-best, batch 64, forward + backward"]
    out.append("symbols  peak MiB  paper")
    for symbols in (5, 10):
        batch = batch_for(config, 64, symbols, rng, device)

        def step(batch: Batch = batch) -> None:
            model.zero_grad(set_to_none=True)
            model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels).loss.backward()

        step()  # allocate the gradients first: the peak above them is the activations'
        peak = peak_bytes(step, device)
        shown = f"{peak / 2**20:8.0f}" if peak is not None else "     n/a"
        out.append(f"{symbols:7d}  {shown}  {PAPER_MEMORY_GB[symbols]} GB")


def train_step(
    model: SymbolInvForConditionalGeneration,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    device: torch.device,
    name: str,
) -> None:
    with precision(device, name):
        loss = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def training_throughput(device: torch.device, args: argparse.Namespace, out: list[str]) -> None:
    rng = random.Random(2)
    out += [
        "",
        f"3. training samples per second, batch {args.train_batch}, 5 symbols per sample (fused AdamW step included)",
    ]
    out.append("model          fp32 samples/s  bf16 samples/s  bf16/fp32")
    for sit, baseline in TRAINING_PRESETS:
        for preset in (sit, baseline):
            config = SymbolInvConfig.from_preset(preset)
            model = SymbolInvForConditionalGeneration(config).to(device).train()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
            batch = batch_for(config, args.train_batch, min(5, config.num_symbol_embeddings), rng, device)
            rates = {}
            for name in ("fp32", "bf16"):
                job = functools.partial(train_step, model, optimizer, batch, device, name)
                rates[name] = args.train_batch / timed(job, device, args.repeats)
            out.append(
                f"{preset:13s}  {rates['fp32']:14.1f}  {rates['bf16']:14.1f}  {rates['bf16'] / rates['fp32']:9.2f}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu, to check the script itself")
    parser.add_argument("--batch", type=int, default=64, help="generation batch size (default 64)")
    parser.add_argument("--train-batch", type=int, default=512, help="training batch size (default 512)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="batch 4, one repeat: a smoke run")
    parser.add_argument(
        "--out", type=Path, default=None, help="results file (default: results/speed_gpu/gpu_<device>.txt)"
    )
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("benchmarks/speed/gpu.py needs a CUDA device, and torch sees none (--device cpu checks the script)")
        return 2
    if args.quick:
        args.batch, args.train_batch, args.repeats = 4, 4, 1
    device = torch.device(args.device)
    out = [f"# python benchmarks/speed/gpu.py{' --quick' if args.quick else ''}", *machine_lines(device)]
    print("\n".join(out), flush=True)
    for section in (generation_per_symbols, memory_per_symbols, training_throughput):
        printed = len(out)
        section(device, args, out)
        print("\n".join(out[printed:]), flush=True)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    path = args.out or RESULTS / f"gpu_{re.sub(r'[^A-Za-z0-9]+', '_', name).strip('_').lower()}.txt"
    if device.type == "cuda" or args.out:
        path.write_text("\n".join(out) + "\n")
        print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
