"""Training steps per second and generation samples per second: SIT presets against the vanilla ones.

Inputs are real samples (``prop-35`` and ``ltl-35`` built locally at a small size), batch 64. Training
steps are forward + backward + AdamW; generation is beam search (3 beams) with the KV cache. Prints
one table; runs on the CPU, and on the GPU too when one is present.

    python benchmarks/train_speed.py            # full presets
    python benchmarks/train_speed.py --quick    # fewer repeats, for a smoke run
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

import torch

import dataset_builders
from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer
from hf_symbolinv.training import SymbolInvDataCollator, tokenize_dataset

PAIRS = {"prop": ("prop-best", "prop-vanilla"), "ltl": ("ltl-best", "ltl-vanilla")}


def batches(task: str, batch_size: int, count: int, workdir: str) -> tuple[list[dict], list[dict]]:
    """``count`` training batches and one generation batch of real samples."""
    name = f"{task}-35"
    data = dataset_builders.build(
        name, os.path.join(workdir, name), num_samples=batch_size * (count + 2) * 10 // 8, seed=0, progress=False
    )
    tokenizer = SymbolInvTokenizer.from_preset(task)
    train = tokenize_dataset(data["train"], tokenizer)
    collator = SymbolInvDataCollator(tokenizer)
    out = [collator([train[i * batch_size + j] for j in range(batch_size)]) for i in range(count + 1)]
    generation = tokenizer(list(data["train"]["input"][:batch_size]), padding=True, return_tensors="pt")
    return out, [dict(generation)]


def time_training(model, train_batches: list[dict], device: torch.device, repeats: int) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    times = []
    for i in range(repeats + 1):
        batch = {k: v.to(device) for k, v in train_batches[i % len(train_batches)].items()}
        _sync(device)
        start = time.perf_counter()
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        _sync(device)
        if i:  # the first step warms up allocators and caches
            times.append(time.perf_counter() - start)
    return statistics.median(times)


@torch.no_grad()
def time_generation(model, batch: dict, device: torch.device, repeats: int, new_tokens: int) -> float:
    model.eval()
    batch = {k: v.to(device) for k, v in batch.items()}
    times = []
    for i in range(repeats + 1):
        _sync(device)
        start = time.perf_counter()
        model.generate(**batch, num_beams=3, max_new_tokens=new_tokens, min_new_tokens=new_tokens)
        _sync(device)
        if i:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=20, help="generated tokens per answer (fixed)")
    parser.add_argument("--tasks", nargs="*", default=list(PAIRS))
    parser.add_argument("--quick", action="store_true", help="2 repeats, 10 new tokens")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.new_tokens = 2, 10
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads, "
        f"torch {torch.__version__}" + (f", GPU {torch.cuda.get_device_name()}" if len(devices) > 1 else "")
    )
    print(
        f"batch {args.batch_size}, median of {args.repeats} (after one warm-up); generation: 3 beams, "
        f"{args.new_tokens} new tokens per answer, KV cache\n"
    )
    header = f"{'device':6} {'task':5} {'model':14} {'params':>10} {'train steps/s':>14} {'gen samples/s':>14}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as workdir:
        for task in args.tasks:
            train_batches, (generation,) = batches(task, args.batch_size, 3, workdir)
            for device in devices:
                for preset in PAIRS[task]:
                    torch.manual_seed(0)
                    overrides = {"num_symbol_embeddings": 26} if preset.endswith("vanilla") else {}
                    model = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset(preset, **overrides))
                    model.to(device)
                    step = time_training(model, train_batches, device, args.repeats)
                    generate = time_generation(model, generation, device, args.repeats, args.new_tokens)
                    params = sum(p.numel() for p in model.parameters())
                    print(
                        f"{device.type:6} {task:5} {preset:14} {params:>10,} {1 / step:>14.3f} "
                        f"{args.batch_size / generate:>14.1f}",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
