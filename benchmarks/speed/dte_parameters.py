"""Parameter counts of the Differentiable Tree Machine (one encoder layer per step) and of the Differentiable
Tree Experts (16 experts and a router shared by every step) at the paper's width, next to the paper's Table 4.

    python benchmarks/speed/dte_parameters.py [--steps 56] [--max-depth 6 8]
"""

from __future__ import annotations

import argparse

import torch

from hf_symbolinv.models.dte import DTEConfig, DTEForTreeTransduction

PAPER = {"dtm": "47M", "dte": "27M"}  # TDTE paper, Table 4 (56 steps)


def count(**config) -> dict[str, int]:
    with torch.device("meta"):
        model = DTEForTreeTransduction(DTEConfig(**config))
    parts = {
        "tree encoder": model.tree_encoder,
        "controller layers": model.step_layers if model.step_layers is not None else model.experts,
        "router": model.router_layer,
    }
    out = {name: sum(p.numel() for p in part.parameters()) for name, part in parts.items() if part is not None}
    out["total"] = sum(p.numel() for p in model.parameters())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=56)
    parser.add_argument("--max-depth", type=int, nargs="+", default=[6, 8])
    args = parser.parse_args()
    print(f"width d_model=256, ffn 1024, 8 heads, filler_dim 64, {args.steps} steps")
    print("| model | max_depth | tree encoder | controller layers | router | total | paper (Table 4) |")
    print("|---|---|---|---|---|---|---|")
    for depth in args.max_depth:
        for controller in ("dtm", "dte"):
            sizes = count(
                controller=controller, num_steps=args.steps, max_depth=depth, d_model=256, ffn_dim=1024, num_heads=8
            )
            cells = [f"{sizes.get(name, 0) / 1e6:.2f}M" for name in ("tree encoder", "controller layers", "router")]
            total = f"{sizes['total'] / 1e6:.2f}M"
            print(f"| {controller} | {depth} | {' | '.join(cells)} | {total} | {PAPER[controller]} |")


if __name__ == "__main__":
    main()
