"""Train a Symbol-Invariant Transformer with a custom Accelerate loop.

The same script runs on a CPU, one GPU, or several GPUs and machines; Accelerate does the
distribution (DDP, FSDP or DeepSpeed, from its own config), this script writes none of it:

    python examples/train.py --task prop --preset prop-best --data DATA_DIR --output OUT_DIR
    accelerate launch examples/train.py --task prop --preset prop-best --data DATA_DIR --output OUT_DIR
    accelerate launch --multi_gpu --num_processes 8 examples/train.py ...          # data parallel on 8 GPUs
    accelerate launch --config_file examples/accelerate/fsdp.yaml examples/train.py ...   # sharded (FSDP2)
    ACCELERATE_USE_CPU=true torchrun --nproc_per_node 2 examples/train.py ...      # data parallel on CPUs

Settings follow the reference: AdamW (lr 1e-3, betas (0.9, 0.95), weight decay 0.1), a cosine
schedule with linear warmup, gradient clipping at 1.0, gradient accumulation. ``DATA_DIR`` is a
dataset built by ``symbolinv data build`` (or any dataset with ``input`` and ``target`` columns).
Checkpoints (``OUT_DIR/checkpoint-STEP``) hold the full training state; rerunning the same command
resumes from the newest one. The final model is saved with ``save_pretrained`` into ``OUT_DIR``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import datasets
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import get_cosine_schedule_with_warmup

import hf_symbolinv  # noqa: F401  (registers the model family)
from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer
from hf_symbolinv.tasks import get_task, task_names
from hf_symbolinv.training import RECIPE, SymbolInvDataCollator, tokenize_dataset

CHECKPOINT = re.compile(r"checkpoint-(\d+)$")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=task_names(), required=True)
    parser.add_argument("--preset", required=True, help="a SymbolInvConfig preset, e.g. prop-best or prop-vanilla")
    parser.add_argument("--data", required=True, help="dataset folder (load_dataset) with a train split")
    parser.add_argument("--output", required=True)
    parser.add_argument("--steps", type=int, default=1000, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=64, help="per device, per accumulation step")
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--lr", type=float, default=RECIPE["learning_rate"])
    parser.add_argument("--weight-decay", type=float, default=RECIPE["weight_decay"])
    parser.add_argument("--warmup-steps", type=int, default=None, help="default: 5%% of the steps")
    parser.add_argument("--max-grad-norm", type=float, default=RECIPE["max_grad_norm"])
    parser.add_argument("--save-every", type=int, default=500, help="checkpoint every N optimizer steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--config-override",
        nargs="*",
        default=[],
        metavar="FIELD=VALUE",
        help="override preset fields, e.g. d_model=32 encoder_layers=2",
    )
    return parser.parse_args(argv)


def parse_overrides(pairs: Sequence[str]) -> dict:
    import json

    overrides = {}
    for pair in pairs:
        field, _, raw = pair.partition("=")
        if not field or not raw:
            raise SystemExit(f"--config-override expects FIELD=VALUE, got {pair!r}")
        try:
            overrides[field] = json.loads(raw)
        except json.JSONDecodeError:
            overrides[field] = raw
    return overrides


def latest_checkpoint(output: Path) -> Path | None:
    found = [(int(m.group(1)), p) for p in output.glob("checkpoint-*") if (m := CHECKPOINT.search(p.name))]
    return max(found)[1] if found else None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    accelerator = Accelerator(gradient_accumulation_steps=args.grad_accum)
    set_seed(args.seed)
    output = Path(args.output)
    tokenizer = SymbolInvTokenizer.from_preset(get_task(args.task).vocabulary)
    config = SymbolInvConfig.from_preset(args.preset, **parse_overrides(args.config_override))
    if config.vocabulary != tokenizer.task_vocabulary.name:
        raise SystemExit(f"preset {args.preset!r} is for the {config.vocabulary!r} vocabulary, not {args.task!r}")
    model = SymbolInvForConditionalGeneration(config)

    dataset = datasets.load_dataset(args.data)
    if "train" not in dataset:
        raise SystemExit(f"{args.data} has no train split (splits: {sorted(dataset)})")
    with accelerator.main_process_first():
        train = tokenize_dataset(dataset["train"], tokenizer)
    collator = SymbolInvDataCollator(tokenizer, model=model)
    loader = DataLoader(
        train,
        batch_size=args.batch_size,
        shuffle=True,
        collate_fn=collator,
        generator=torch.Generator().manual_seed(args.seed),
    )
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(RECIPE["adam_beta1"], RECIPE["adam_beta2"]),
    )
    warmup = args.warmup_steps if args.warmup_steps is not None else max(1, int(args.steps * RECIPE["warmup_steps"]))
    # The scheduler is stepped once per optimizer step on every process.
    scheduler = get_cosine_schedule_with_warmup(optimizer, warmup, args.steps * accelerator.num_processes)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if launched > accelerator.num_processes:
        # torchrun on CPUs without ACCELERATE_USE_CPU: every process would train alone, all writing one OUTPUT.
        sys.exit(
            f"error: launched as {launched} processes, but Accelerate runs each alone (on CPUs set "
            "ACCELERATE_USE_CPU=true, or use `accelerate launch` with a config)"
        )
    accelerator.print(f"training on {accelerator.num_processes} process(es), {accelerator.distributed_type}")

    step = 0
    resume = latest_checkpoint(output) if output.exists() else None
    if resume is not None:
        accelerator.load_state(str(resume))
        step = int(CHECKPOINT.search(resume.name).group(1))
        accelerator.print(f"resuming from {resume} (step {step})")
    batches_per_epoch = len(loader) // args.grad_accum or 1
    progress = tqdm(total=args.steps, initial=step, desc="training", disable=not accelerator.is_main_process)
    model.train()
    while step < args.steps:
        epoch = step // batches_per_epoch
        loader.set_epoch(epoch) if hasattr(loader, "set_epoch") else None
        # Skip the batches of this epoch already seen before a resume.
        skip = (step % batches_per_epoch) * args.grad_accum
        epoch_loader = accelerator.skip_first_batches(loader, skip) if skip else loader
        for batch in epoch_loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            if not accelerator.sync_gradients:
                continue
            step += 1
            progress.update(1)
            progress.set_postfix(loss=f"{loss.item():.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
            if step % args.save_every == 0 or step == args.steps:
                save_checkpoint(accelerator, output, step)
            if step >= args.steps:
                break
    progress.close()
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(model)
        unwrapped.save_pretrained(output, safe_serialization=True)
        tokenizer.save_pretrained(output)
        print(f"saved the model to {output} after {step} steps (final loss {loss.item():.4f})")
    return 0


def save_checkpoint(accelerator: Accelerator, output: Path, step: int) -> None:
    """Write the full state under a temporary name, then rename, so a crash never leaves half a checkpoint."""
    final = output / f"checkpoint-{step}"
    staging = output / f".checkpoint-{step}.tmp"
    if accelerator.is_main_process and staging.exists():
        shutil.rmtree(staging)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(staging))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    sys.exit(main())
