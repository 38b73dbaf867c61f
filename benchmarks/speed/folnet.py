"""FOLNet's cost against the SIT and a vanilla transformer at equal parameter counts.

Forward + backward time (median of repeats, after a warm-up) and activation memory (the bytes autograd keeps
for the backward pass, counted with saved-tensor hooks: the same on every machine) of encoder-decoder models
with about 2.9M parameters each, on random propositional formulas of input length L = 32, 64, 128 (target
length L / 4), batch 8:

* ``sit``: the SIT ``prop-best`` preset (streams: its cost grows with the symbol count S, O(S * L^2));
* ``vanilla``: the fixed-embedding ``prop-vanilla`` preset (one stream, O(L^2));
* ``folnet``: FOLNet with all seven operators, sized to the same parameter count (``trans`` is O(L^3));
* ``folnet-join-assoc``: FOLNet with ``join`` and ``assoc`` only (the paper's dual-branch transformer);
* ``folnet-invariant``: ``folnet``'s sizes in the renaming-invariant variant (same-symbol and parse-tree
  relations, pointer output: O(L^2) memory whatever the symbol count).

    python benchmarks/speed/folnet.py            # L = 32, 64, 128, 5 repeats
    python benchmarks/speed/folnet.py --quick    # L = 32, 64, 2 repeats
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable

import torch

from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer
from hf_symbolinv.logic import format_prop, random_prop_formula, symbols_of
from hf_symbolinv.models.folnet import FOLNetConfig
from hf_symbolinv.models.folnet.modeling_folnet import FOLNetForConditionalGeneration
from hf_symbolinv.models.registry import new_model_config

#: FOLNet's sizes, chosen to match ``prop-best`` (2,906,496 parameters) within a few percent: all seven operators,
#: and join + assoc only (no bool, so no feed-forward block: wider atoms make up the parameters).
FOLNET_SIZES = {
    "folnet": dict(num_layers=6, num_heads=6, head_dim=16, binary_dim=16, ffn_dim=768, binary_ffn_dim=64),
    "folnet-join-assoc": dict(num_layers=6, num_heads=6, head_dim=36, binary_dim=16, ffn_dim=768, binary_ffn_dim=64),
}


def make_models(tokenizer: SymbolInvTokenizer) -> dict[str, Callable[[], torch.nn.Module]]:
    vocab_size = SymbolInvConfig.from_preset("prop-best").vocab_size

    def folnet(name: str, operators: tuple[str, ...]) -> Callable[[], torch.nn.Module]:
        def build() -> torch.nn.Module:
            config = FOLNetConfig(
                vocab_size=vocab_size,
                operators=list(operators),
                max_position_embeddings=512,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
                decoder_start_token_id=SymbolInvConfig.from_preset("prop-best").decoder_start_token_id,
                **FOLNET_SIZES[name],
            )
            return FOLNetForConditionalGeneration(config)

        return build

    return {
        "sit": lambda: SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset("prop-best")),
        "vanilla": lambda: SymbolInvForConditionalGeneration(
            SymbolInvConfig.from_preset("prop-vanilla", num_symbol_embeddings=26)
        ),
        "folnet": folnet("folnet", ("bool", "cjoin", "join", "mu", "assoc", "prod", "trans")),
        "folnet-join-assoc": folnet("folnet-join-assoc", ("join", "assoc")),
        "folnet-invariant": lambda: FOLNetForConditionalGeneration(
            new_model_config(
                "folnet-small", "prop", symbol_invariant=True, max_position_embeddings=512, **FOLNET_SIZES["folnet"]
            )
        ),
    }


def make_batch(tokenizer: SymbolInvTokenizer, length: int, batch_size: int, symbols: int, seed: int) -> dict:
    """Random formulas of ``length - 1`` tokens (plus end of sequence), targets of ``length // 4`` tokens."""
    rng = random.Random(seed)
    names = [chr(ord("a") + k) for k in range(symbols)]
    formulas = [random_prop_formula(rng, length - 1, names) for _ in range(batch_size)]
    sources = [format_prop(formula) for formula in formulas]
    # Targets name only the formula's own symbols (the SIT can emit no other).
    targets = [
        "".join(f"{rng.choice(symbols_of(formula))}{rng.randint(0, 1)}" for _ in range(length // 8))
        for formula in formulas
    ]
    batch = tokenizer(sources, text_target=targets, padding=True, return_tensors="pt")
    batch["labels"] = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
    return dict(batch)


def saved_activation_bytes(model: torch.nn.Module, batch: dict) -> int:
    """Bytes of the distinct tensors autograd saves for the backward pass of one forward."""
    seen: dict[tuple, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        if not isinstance(tensor, torch.nn.Parameter):
            storage = tensor.untyped_storage()
            seen[(storage.data_ptr(), storage.nbytes())] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = model(**batch).loss
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(seen.values())


def step_seconds(model: torch.nn.Module, batch: dict, repeats: int) -> float:
    times = []
    for i in range(repeats + 1):
        start = time.perf_counter()
        model(**batch).loss.backward()
        model.zero_grad(set_to_none=True)
        if i:  # the first step warms up allocators and caches
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--symbols", type=int, default=5, help="distinct symbols per formula (the SIT's S)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="L = 32, 64 and 2 repeats")
    args = parser.parse_args()
    if args.quick:
        args.lengths, args.repeats = [32, 64], 2
    torch.manual_seed(0)
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    builders = make_models(tokenizer)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads, "
        f"torch {torch.__version__}; batch {args.batch_size}, {args.symbols} symbols per formula, "
        f"median of {args.repeats} forward+backward steps after one warm-up\n"
    )
    header = f"{'L':>4} {'model':18} {'params':>10} {'ms/step':>9} {'x vanilla':>9} {'act. MiB':>9} {'x vanilla':>9}"
    print(header)
    print("-" * len(header))
    for length in args.lengths:
        batch = make_batch(tokenizer, length, args.batch_size, args.symbols, seed=length)
        rows = []
        for name, build in builders.items():
            model = build().train()
            params = sum(p.numel() for p in model.parameters())
            memory = saved_activation_bytes(model, batch)
            seconds = step_seconds(model, batch, args.repeats)
            rows.append((name, params, seconds, memory))
            del model
        base = next(row for row in rows if row[0] == "vanilla")
        for name, params, seconds, memory in rows:
            print(
                f"{length:>4} {name:18} {params:>10,} {1000 * seconds:>9.1f} {seconds / base[2]:>9.2f} "
                f"{memory / 2**20:>9.1f} {memory / base[3]:>9.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
