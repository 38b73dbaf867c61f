"""Cost of the tree position encoding on a batch of formulas: the tensor computation the model runs
against a per-token Python walk of the parse (what the model did before: a host round trip per batch).

    python benchmarks/speed/tree_encoding.py [--batch 64] [--rounds 50]

Prints milliseconds per batch for both and their ratio, and checks that they agree.
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from hf_symbolinv import SymbolInvConfig
from hf_symbolinv.models.symbolinv.positions import tree_position_encoding
from hf_symbolinv.utils.machine import processor_name


def python_walk(input_ids: torch.LongTensor, attention_mask: torch.Tensor, config: SymbolInvConfig) -> torch.Tensor:
    """The baseline: one pass over each sample's tokens with a stack of open operators, on the host."""
    batch, length = input_ids.shape
    max_steps = config.d_model // 2
    index: list[int] = []
    for b, (row, mask) in enumerate(zip(input_ids.tolist(), attention_mask.tolist())):
        stack: list[list] = []  # [path, arity, children seen]
        for j, token in enumerate(row):
            if not mask[j] or token in (config.eos_token_id, config.pad_token_id):
                continue
            path: list[int] = []
            if stack:
                parent = stack[-1]
                path = [0 if parent[2] == 0 else 1] + parent[0]
                parent[2] += 1
                if parent[2] == parent[1]:
                    stack.pop()
            for step, direction in enumerate(path[:max_steps]):
                index.append(((b * length + j) * max_steps + step) * 2 + direction)
            arity = config.token_arities[token] if token < config.num_base_tokens else 0
            if arity:
                stack.append([path, arity, 0])
    flat = torch.zeros(batch * length * max_steps * 2)
    flat[torch.tensor(index, dtype=torch.long)] = 1.0
    encoding = flat.view(batch, length, max_steps * 2)
    return torch.nn.functional.pad(encoding, (0, config.d_model - encoding.shape[-1])).to(input_ids.device)


def random_formula(rng: random.Random, size: int, arities: list[int], num_base: int) -> list[int]:
    operators = [token for token, arity in enumerate(arities) if arity]
    out: list[int] = []

    def grow(n: int) -> None:
        if n <= 1:
            out.append(num_base + rng.randrange(5))
            return
        operator = rng.choice(operators)
        out.append(operator)
        if arities[operator] == 1:
            grow(n - 1)
        else:
            left = rng.randint(1, max(1, n - 2))
            grow(left)
            grow(max(1, n - 1 - left))

    grow(size)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--preset", default="ltl-best")
    args = parser.parse_args()
    config = SymbolInvConfig.from_preset(args.preset)
    rng = random.Random(0)
    rows = [
        random_formula(rng, rng.randint(20, 35), config.token_arities, config.num_base_tokens)
        for _ in range(args.batch)
    ]
    length = max(map(len, rows)) + 1
    ids = torch.tensor([row + [config.eos_token_id] + [config.pad_token_id] * (length - len(row) - 1) for row in rows])
    mask = (ids != config.pad_token_id).long()
    assert torch.equal(tree_position_encoding(ids, mask, config), python_walk(ids, mask, config))
    print(f"machine: {processor_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"batch {args.batch} formulas of {config.d_model}-dim {args.preset!r}, {length} tokens, min of {args.rounds}")
    timings = {}
    for name, function in (("python walk (before)", python_walk), ("tensor ops (now)", tree_position_encoding)):
        best = float("inf")
        for _ in range(args.rounds):
            start = time.perf_counter()
            function(ids, mask, config)
            best = min(best, time.perf_counter() - start)
        timings[name] = best
        print(f"{name:22s} {best * 1000:8.2f} ms per batch")
    before, now = timings.values()
    print(f"ratio now / before: {now / before:.2f}")


if __name__ == "__main__":
    main()
