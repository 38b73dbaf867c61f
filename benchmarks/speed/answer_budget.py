"""Evaluation that ends: time of answering formulas in input order with a fixed cap of new tokens (as evaluation
did before), grouped by (symbols, length), and grouped and capped by what an answer can need.

An undertrained model's answers often never end (the LTL plateau's `1 ; 1 ; …`, a propositional model that repeats
itself); beam search then runs every batch to `max_new_tokens`. A propositional answer names each symbol at most
once, so `Task.answer_budget` stops it after 2 tokens per symbol and the end. A batch costs as many streams as its
input with the most symbols and as many positions as its longest, so batches grouped by (symbols, length) waste
little. This times `generate_answers` of a model on the first N formulas of a dataset split in the three ways, in
one run, and checks that the answers agree.

    python benchmarks/speed/answer_budget.py --data data/prop-small-8sym --split test          # an untrained prop-small
    python benchmarks/speed/answer_budget.py --model hf_symbolinv/pretrained/prop-small --data data/prop-small-8sym
    python benchmarks/speed/answer_budget.py --model hf_symbolinv/pretrained/prop-best --data data/prop-35 --limit 1000
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from datasets import load_dataset
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from hf_symbolinv.evaluation.seq2seq import generate_answers
from hf_symbolinv.models.registry import new_model_config
from hf_symbolinv.models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer
from hf_symbolinv.tasks import get_task
from hf_symbolinv.utils.machine import processor_name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="a saved prop model (default: the prop-small preset, untrained)")
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--beam", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.model is None:
        model = AutoModelForSeq2SeqLM.from_config(new_model_config("prop-small", "prop")).eval()
        tokenizer, what = SymbolInvTokenizer.from_preset("prop"), "prop-small preset, untrained"
    else:
        model = AutoModelForSeq2SeqLM.from_pretrained(args.model, dtype=torch.float32).eval()
        tokenizer, what = AutoTokenizer.from_pretrained(args.model), args.model
    split = load_dataset(args.data, split=args.split)
    sources = list(split["input"])[: args.limit]
    budget = get_task("prop").answer_budget
    print(f"{what}; {len(sources)} formulas of {args.data} ({args.split}), beam {args.beam}, {args.threads} thread(s)")
    print(f"machine: {processor_name()}, {os.cpu_count()} cores, torch {torch.__version__}")
    print("| batches | new tokens | seconds | ratio | longest answer (tokens) | answers as in the first row |")
    print("|---|---|---|---|---|---|")
    capped = lambda texts: min(128, max(map(budget, texts)))  # noqa: E731
    first, baseline = None, None
    for order, name, limit, group in (
        ("input order", "at most 128", 128, False),
        ("by (symbols, length)", "at most 128", 128, True),
        ("by (symbols, length)", "the task's budget", capped, True),
    ):
        start = time.perf_counter()
        answers = generate_answers(
            model, tokenizer, sources, num_beams=args.beam, max_new_tokens=limit, progress=False, group=group
        )
        seconds = time.perf_counter() - start
        first, baseline = first or answers, baseline or seconds
        same = sum(a == b for a, b in zip(answers, first)) / len(answers)
        longest = max(len(tokenizer.tokenize(answer[0])) if answer[0] else 0 for answer in answers)
        print(
            f"| {order} | {name} | {seconds:.1f} | {baseline / seconds:.2f}x | {longest} | {100 * same:.1f}% |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
