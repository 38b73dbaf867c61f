"""Training steps per second and generation samples per second: SIT presets against the vanilla ones.

Inputs are real samples (``prop-35`` and ``ltl-35`` built locally at a small size), batch 64. Training
steps are forward + backward + AdamW; generation is beam search (3 beams) with the KV cache. Prints
one table; runs on the CPU, and on the GPU too when one is present.

    python benchmarks/speed/train_speed.py            # full presets
    python benchmarks/speed/train_speed.py --quick    # fewer repeats, for a smoke run
    python benchmarks/speed/train_speed.py --tasks prop --presets prop-small --compile inductor --no-generation
        # each preset eager, eager on bucketed batches, and compiled whole (as `symbolinv train --compile`)
    python benchmarks/speed/train_speed.py --tasks ltl --presets ltl-small --bf16 --no-generation --batch-size 512
        # each preset in fp32 and with bf16 autocast (as `symbolinv train --bf16`; the weights stay fp32)
    python benchmarks/speed/train_speed.py --grouped --tasks prop --presets prop-small --batch-size 512
        # samples/s of batches drawn at random against batches grouped by streams and length, from one pool
        # (as `symbolinv train --group-by-length` draws them)
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import sys
import tempfile
import time

import torch

import dataset_builders
from dataset_builders.params import BuildOptions
from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer
from hf_symbolinv.training import SymbolInvDataCollator, grouping_key, tokenize_dataset

PAIRS = {"prop": ("prop-best", "prop-vanilla"), "ltl": ("ltl-best", "ltl-vanilla")}


@functools.cache
def built(task: str, num_samples: int, workdir: str):
    """``task``-35 samples built locally (once per task)."""
    name = f"{task}-35"
    return dataset_builders.build(
        name, os.path.join(workdir, name), BuildOptions(num_samples=num_samples, seed=0, progress=False)
    )


def batches(
    task: str, batch_size: int, count: int, workdir: str, bucketed: bool = False, model=None
) -> tuple[list[dict], list[dict]]:
    """``count`` training batches and one generation batch of real samples (``bucketed``: as a compiled model
    gets them, padded to buckets, with ``model``'s stream slots)."""
    data = built(task, batch_size * (count + 2) * 10 // 8, workdir)
    tokenizer = SymbolInvTokenizer.from_preset(task)
    train = tokenize_dataset(data["train"], tokenizer)
    collator = SymbolInvDataCollator(tokenizer, model=model, bucketed=bucketed)
    out = [collator([train[i * batch_size + j] for j in range(batch_size)]) for i in range(count + 1)]
    generation = tokenizer(list(data["train"]["input"][:batch_size]), padding=True, return_tensors="pt")
    return out, [dict(generation)]


def training_step(model, optimizer, batch: dict, device: torch.device, bf16: bool = False) -> float:
    """Seconds of one training step (forward, backward, optimizer) on ``batch`` (``bf16``: the forward under bf16
    autocast)."""
    batch = {k: v.to(device) for k, v in batch.items()}
    _sync(device)
    start = time.perf_counter()
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    _sync(device)
    return time.perf_counter() - start


def time_training(
    model, train_batches: list[dict], device: torch.device, repeats: int, bf16: bool = False
) -> tuple[float, float]:
    """Median seconds per step, and the seconds of the warm-up (one step per batch: allocators, caches and, for a
    compiled model, one compilation per shape bucket)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    step = functools.partial(training_step, model, optimizer, device=device, bf16=bf16)
    warm_up = sum(step(batch) for batch in train_batches)
    return statistics.median(step(train_batches[i % len(train_batches)]) for i in range(repeats)), warm_up


def orders(task: str, batch_size: int, count: int, workdir: str, data_dir: str | None) -> dict[str, list[dict]]:
    """``count`` training batches of one pool of samples (the 50 batches of the Trainer's length-grouping mega-batch)
    in two orders: at random (the Trainer's default) and grouped by :func:`grouping_key` (``--group-by-length``).
    The pool is the first samples of ``DATA_DIR/TASK-35`` where given (a built ``symbolinv data build`` folder)."""
    from datasets import load_dataset
    from transformers.trainer_pt_utils import LengthGroupedSampler

    pool = 50 * batch_size
    if data_dir is not None:
        data = {"train": load_dataset(os.path.join(data_dir, f"{task}-35"), split="train")}
    else:
        data = built(task, pool * 10 // 8 + batch_size, workdir)
    tokenizer = SymbolInvTokenizer.from_preset(task)
    train = tokenize_dataset(data["train"].select(range(pool)), tokenizer)
    collator = SymbolInvDataCollator(tokenizer)
    keys = [grouping_key(ids, mask) for ids, mask in zip(train["input_ids"], train["symbol_mask"])]
    generator = torch.Generator().manual_seed(0)
    drawn = {
        "random": torch.randperm(pool, generator=generator).tolist(),
        "grouped": list(LengthGroupedSampler(batch_size, lengths=keys, generator=generator)),
    }
    # Batches from the middles of ``count`` equal stretches of each order stand for a whole pass (the grouped order
    # puts the batch with the longest sample first, to fail early on memory: one in 50, not one in ``count``).
    places = [int((k + 0.5) * (pool // batch_size) / count) for k in range(count)]
    return {
        order: [collator([train[i] for i in indices[p * batch_size : (p + 1) * batch_size]]) for p in places]
        for order, indices in drawn.items()
    }


def time_pass(model, train_batches: list[dict], device: torch.device) -> float:
    """Seconds of one training step on each batch, summed (after one step on the first, a warm-up)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    training_step(model, optimizer, train_batches[0], device)
    return sum(training_step(model, optimizer, batch, device) for batch in train_batches)


def compare_orders(args: argparse.Namespace, devices: list[torch.device]) -> int:
    """Samples per second of random against length-grouped batches of the same pool, for each preset and task."""
    print(f"batch {args.batch_size}, {args.repeats} batches from evenly spaced stretches of each order\n")
    header = f"{'device':6} {'task':5} {'model':14} {'random samples/s':>17} {'grouped samples/s':>18} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as workdir:
        for task in args.tasks:
            drawn = orders(task, args.batch_size, args.repeats, workdir, args.data_dir)
            for device in devices:
                for preset in args.presets or PAIRS[task][:1]:
                    rates = {}
                    for order, train_batches in drawn.items():
                        torch.manual_seed(0)
                        model = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset(preset)).to(device)
                        rates[order] = len(train_batches) * args.batch_size / time_pass(model, train_batches, device)
                    print(
                        f"{device.type:6} {task:5} {preset:14} {rates['random']:>17.1f} {rates['grouped']:>18.1f} "
                        f"{rates['grouped'] / rates['random']:>6.2f}",
                        flush=True,
                    )
    return 0


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
    parser.add_argument("--presets", nargs="*", help="these presets instead of each task's SIT and vanilla pair")
    parser.add_argument("--compile", metavar="BACKEND", help="also time each preset compiled with this backend")
    parser.add_argument("--bf16", action="store_true", help="also time each preset's training with bf16 autocast")
    parser.add_argument("--no-generation", action="store_true", help="time training only")
    parser.add_argument(
        "--grouped",
        action="store_true",
        help="compare random with length-grouped batches (--repeats batches each); no generation",
    )
    parser.add_argument("--data-dir", help="with --grouped: take the pool from DIR/TASK-35 (built) instead of building")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.new_tokens = 2, 10
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads, "
        f"torch {torch.__version__}" + (f", GPU {torch.cuda.get_device_name()}" if len(devices) > 1 else "")
    )
    if args.grouped:
        return compare_orders(args, devices)
    print(
        f"batch {args.batch_size}, median of {args.repeats} (after one warm-up); generation: 3 beams, "
        f"{args.new_tokens} new tokens per answer, KV cache\n"
    )
    header = (
        f"{'device':6} {'task':5} {'model':14} {'mode':9} {'params':>10} {'train steps/s':>14} {'warm-up s':>10} "
        f"{'gen samples/s':>14}"
    )
    print(header)
    print("-" * len(header))
    # bucketed: eager on the compiled run's batches (padded to buckets), to separate padding from compilation.
    # bf16: eager under bf16 autocast (as `symbolinv train --bf16`).
    modes = ["eager"] + (["bucketed", "compiled"] if args.compile else []) + (["bf16"] if args.bf16 else [])
    with tempfile.TemporaryDirectory() as workdir:
        for task in args.tasks:
            for device in devices:
                for preset in args.presets or PAIRS[task]:
                    for mode in modes:
                        torch.manual_seed(0)
                        overrides = {"num_symbol_embeddings": 26} if preset.endswith("vanilla") else {}
                        model = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset(preset, **overrides))
                        model.to(device)
                        train_batches, (generation,) = batches(
                            task, args.batch_size, 3, workdir, bucketed=mode in ("bucketed", "compiled"), model=model
                        )
                        if mode == "compiled":
                            model.compile(backend=args.compile, fullgraph=True, dynamic=False)
                        step, warm_up = time_training(model, train_batches, device, args.repeats, mode == "bf16")
                        generate = (
                            None
                            if args.no_generation or mode != "eager"
                            else time_generation(model, generation, device, args.repeats, args.new_tokens)
                        )
                        params = sum(p.numel() for p in model.parameters())
                        print(
                            f"{device.type:6} {task:5} {preset:14} {mode:9} {params:>10,} {1 / step:>14.3f} "
                            f"{warm_up:>10.1f} "
                            + (f"{args.batch_size / generate:>14.1f}" if generate else f"{'-':>14}"),
                            flush=True,
                        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
