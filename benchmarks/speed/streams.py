"""Cost of the SIT's streams against the fixed-embedding model of the same size.

Measures forward+backward time, greedy-generation time and peak memory for inputs with 1, 2, 5, 10
and 20 distinct symbols (one SIT stream per symbol), batch 64, inputs of 35-50 tokens, and checks
two targets:

* cost per stream at most 1.2 x the fixed model's cost;
* a training batch whose samples have 1..10 symbols (uniformly) costs at most 0.65 x the same
  batch with every sample at 10 symbols.

The inputs are random well-formed Polish-notation formulas (the presets' tree position encoding
parses them), so the benchmark runs what training runs.

Run from the repository root::

    PYTHONPATH=. python benchmarks/speed/streams.py            # full run, CPU
    PYTHONPATH=. python benchmarks/speed/streams.py --quick    # about a minute on 2 cores
    PYTHONPATH=. python benchmarks/speed/streams.py --threads 1 --clock cpu   # on a shared machine
    PYTHONPATH=. python benchmarks/speed/streams.py --device cuda --profile
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import torch

from hf_symbolinv.models.symbolinv.configuration_symbolinv import PRESETS, SymbolInvConfig
from hf_symbolinv.models.symbolinv.modeling_symbolinv import SymbolInvForConditionalGeneration
from hf_symbolinv.utils.machine import processor_name

DEFAULT_STREAMS = (1, 2, 5, 10, 20)
PER_STREAM_TARGET = 1.2
MIXED_TARGET = 0.65
MIXED_MAX_SYMBOLS = 10
MIN_LENGTH, MAX_LENGTH = 35, 50  # tokens per input, EOS included
MIB = 2**20
T = TypeVar("T")

# The presets whose SIT uses per-stream attention only, so that a fixed model with the same
# attention codes exists (the fixed model has one stream and cannot aggregate).
BASE_PRESETS = tuple(
    name
    for name, fields in PRESETS.items()
    if fields.get("embedding_type") == "streams" and fields.get("stream_attention") == "EP-DP-CP"
)


# ---------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------
@dataclass
class Batch:
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor
    symbol_counts: list[int]

    @property
    def mean_symbols(self) -> float:
        return sum(self.symbol_counts) / len(self.symbol_counts)


def _valid_rotation(arities: list[int]) -> list[int]:
    """The rotation of ``arities`` that reads as one prefix expression (cycle lemma: exactly one
    exists when the arities sum to ``len - 1``)."""
    for start in range(len(arities)):
        sequence = arities[start:] + arities[:start]
        open_slots = 1
        for position, arity in enumerate(sequence):
            open_slots += arity - 1
            if open_slots == 0 and position != len(sequence) - 1:
                break
        else:
            if open_slots == 0:
                return sequence
    raise AssertionError("no valid rotation: the arities do not describe one tree")


def random_formula(length: int, symbols: Sequence[int], config: SymbolInvConfig, rng: random.Random) -> list[int]:
    """A random formula of about ``length`` tokens in Polish notation using every one of ``symbols``
    (symbol slots) as leaves, followed by EOS.

    ``length`` grows where ``len(symbols)`` leaves do not fit (20 symbols need 39 tokens)."""
    arities = config.token_arities or []
    unary = [token for token, arity in enumerate(arities) if arity == 1]
    binary = [token for token, arity in enumerate(arities) if arity == 2]
    ids = [config.num_base_tokens + slot for slot in symbols]
    if not binary:  # a vocabulary without operators (copy task): a plain symbol string
        leaves = ids + [rng.choice(ids) for _ in range(max(length, len(ids)) - len(ids))]
        rng.shuffle(leaves)
        return leaves + [config.eos_token_id]
    length = max(length, 2 * len(ids) - 1)
    if not unary and length % 2 == 0:  # binary trees only have odd sizes
        length += 1
    # A tree with b binary and u unary operators has b + 1 leaves and u + 2b + 1 tokens.
    num_binary = rng.randint(len(ids) - 1, (length - 1) // 2) if unary else (length - 1) // 2
    num_unary = length - 1 - 2 * num_binary
    shape = [2] * num_binary + [1] * num_unary + [0] * (num_binary + 1)
    rng.shuffle(shape)
    leaves = ids + [rng.choice(ids) for _ in range(num_binary + 1 - len(ids))]
    rng.shuffle(leaves)
    leaf_iter = iter(leaves)
    tokens = [
        rng.choice(binary) if arity == 2 else rng.choice(unary) if arity == 1 else next(leaf_iter)
        for arity in _valid_rotation(shape)
    ]
    return tokens + [config.eos_token_id]


def make_batch(
    config: SymbolInvConfig,
    lengths: Sequence[int],
    symbol_counts: Sequence[int],
    num_slots: int,
    target_length: int,
    rng: random.Random,
) -> Batch:
    """Formulas with the given lengths and symbol counts; labels are ``target_length`` random tokens
    (non-special base tokens and the input's own symbols, the only symbols the SIT can emit) + EOS."""
    plain_tokens = [
        t
        for t in range(config.num_base_tokens)
        if t not in (config.pad_token_id, config.eos_token_id, config.decoder_start_token_id)
    ]
    inputs, targets = [], []
    for length, count in zip(lengths, symbol_counts):
        slots = rng.sample(range(num_slots), count)
        inputs.append(random_formula(length - 1, slots, config, rng))
        vocabulary = plain_tokens + [config.num_base_tokens + slot for slot in slots]
        targets.append([rng.choice(vocabulary) for _ in range(target_length)] + [config.eos_token_id])
    width = max(map(len, inputs))
    input_ids = torch.tensor([row + [config.pad_token_id] * (width - len(row)) for row in inputs])
    attention_mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in inputs])
    return Batch(input_ids, attention_mask, torch.tensor(targets), list(symbol_counts))


def mixed_counts(batch_size: int, largest: int, rng: random.Random) -> list[int]:
    """Symbol counts spread as evenly as the batch size allows over 1..largest (evenly spaced
    quantiles), shuffled: a random draw of 64 could land far from the mean the target is about."""
    counts = [1 + (i * largest) // batch_size for i in range(batch_size)]
    rng.shuffle(counts)
    return counts


# ---------------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------------
def train_step(model: SymbolInvForConditionalGeneration, batch: Batch) -> None:
    model.zero_grad(set_to_none=True)
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels)
    out.loss.backward()


def train_job(model: SymbolInvForConditionalGeneration, batch: Batch) -> None:
    model.train()  # dropout on, as in training
    train_step(model, batch)


def generate_job(model: SymbolInvForConditionalGeneration, batch: Batch, new_tokens: int) -> None:
    model.eval()
    generate(model, batch, new_tokens)


def generate(model: SymbolInvForConditionalGeneration, batch: Batch, new_tokens: int) -> None:
    with torch.no_grad():
        # min_new_tokens = max_new_tokens: every model emits the same number of tokens, so the
        # timings compare equal work (an untrained model may emit EOS at any step otherwise).
        model.generate(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
        )


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_interleaved(
    jobs: dict[str, Callable[[], None]],
    warmup: int,
    repeats: int,
    device: torch.device,
    stat: str,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Seconds per call of each job. Jobs alternate within each round, so load from other processes
    and allocator state hit every model alike instead of whichever ran during a busy spell."""
    samples: dict[str, list[float]] = {name: [] for name in jobs}
    for round_index in range(warmup + repeats):
        for name, job in jobs.items():
            synchronize(device)
            start = clock()
            job()
            synchronize(device)
            if round_index >= warmup:
                samples[name].append(clock() - start)
    reduce = min if stat == "min" else statistics.median
    return {name: reduce(values) for name, values in samples.items()}


def _cpu_peak_bytes(job: Callable[[], None]) -> int | None:
    """Peak of the bytes torch allocates on the CPU during ``job``, above the level at its start:
    the running sum of the profiler's allocation / free records in time order."""
    try:
        from torch._C._profiler import _EventType
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        job()
    records: list[tuple[int, int]] = []
    pending = list(prof.profiler.kineto_results.experimental_event_tree())
    while pending:
        event = pending.pop()
        if event.tag == _EventType.Allocation and str(event.extra_fields.device).startswith("cpu"):
            records.append((event.start_time_ns, event.extra_fields.alloc_size))
        pending.extend(event.children)
    current = peak = 0
    for _, size in sorted(records):
        current += size
        peak = max(peak, current)
    return peak


def peak_bytes(job: Callable[[], None], device: torch.device) -> int | None:
    """Peak memory torch allocates while ``job`` runs, above what was allocated before it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        job()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    try:
        return _cpu_peak_bytes(job)
    except Exception:  # a private profiler API: report n/a rather than abort the timings
        return None


# ---------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------
def build_models(
    preset: str, max_symbols: int, device: torch.device, include_best: bool = True
) -> dict[str, SymbolInvForConditionalGeneration]:
    """The SIT at EP-DP-CP, the fixed model of the same dimensions and attention codes and, for
    information, the preset's ``-best`` SIT (aggregated attention: more sublayers, no fixed twin)."""
    configs = {
        "sit": SymbolInvConfig.from_preset(preset, max_symbols=max_symbols, stream_attention="EP-DP-CP"),
        "fixed": SymbolInvConfig.from_preset(
            preset,
            max_symbols=max_symbols,
            embedding_type="fixed",
            stream_attention="EP-DP-CP",
            num_symbol_embeddings=max_symbols,
        ),
    }
    if include_best and f"{preset}-best" in PRESETS:
        configs["best"] = SymbolInvConfig.from_preset(f"{preset}-best", max_symbols=max_symbols)
    return {name: SymbolInvForConditionalGeneration(config).to(device) for name, config in configs.items()}


def to_device(batch: Batch, device: torch.device) -> Batch:
    return Batch(
        batch.input_ids.to(device), batch.attention_mask.to(device), batch.labels.to(device), batch.symbol_counts
    )


# ---------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------
@dataclass
class Row:
    label: str
    streams: float  # mean symbols per sample: the SIT's streams per sample
    seconds: dict[str, float]  # "<model>/<fb|gen>" -> seconds per batch
    memory: dict[str, int | None]  # "<model>/<fb|gen>" -> peak bytes

    def per_stream(self, kind: str, metric: str = "time") -> float | None:
        if metric == "time":
            sit, fixed = self.seconds.get(f"sit/{kind}"), self.seconds.get(f"fixed/{kind}")
        else:
            sit, fixed = self.memory.get(f"sit/{kind}"), self.memory.get(f"fixed/{kind}")
        if sit is None or fixed is None or not fixed:
            return None
        return sit / (self.streams * fixed)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:.1f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def machine_lines(device: torch.device) -> list[str]:
    lines = [
        f"machine: {processor_name()}, {os.cpu_count()} logical cores, torch {torch.__version__} "
        f"({torch.get_num_threads()} intra-op threads), python {platform.python_version()}",
        f"device: {device}" + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""),
    ]
    if hasattr(os, "getloadavg"):
        lines.append(
            "load average (1/5/15 min) before the run: " + " / ".join(f"{value:.2f}" for value in os.getloadavg())
        )
    return lines


def print_table(rows: list[Row], has_best: bool) -> None:
    headers = [
        "streams",
        "SIT f+b",
        "fix f+b",
        "f+b/str",
        "SIT gen",
        "fix gen",
        "gen/str",
        "SIT trMiB",
        "fix trMiB",
        "tr/str",
        "SIT gMiB",
        "fix gMiB",
        "g/str",
    ]
    if has_best:
        headers += ["best f+b", "best gen", "bestfb/str"]
    table = [headers]
    for row in rows:
        cells = [
            row.label,
            _ms(row.seconds.get("sit/fb")),
            _ms(row.seconds.get("fixed/fb")),
            _ratio(row.per_stream("fb")),
            _ms(row.seconds.get("sit/gen")),
            _ms(row.seconds.get("fixed/gen")),
            _ratio(row.per_stream("gen")),
            _mib(row.memory.get("sit/fb")),
            _mib(row.memory.get("fixed/fb")),
            _ratio(row.per_stream("fb", "memory")),
            _mib(row.memory.get("sit/gen")),
            _mib(row.memory.get("fixed/gen")),
            _ratio(row.per_stream("gen", "memory")),
        ]
        if has_best:
            best, fixed = row.seconds.get("best/fb"), row.seconds.get("fixed/fb")
            cells += [
                _ms(best),
                _ms(row.seconds.get("best/gen")),
                _ratio(best / (row.streams * fixed) if best and fixed else None),
            ]
        table.append(cells)
    widths = [max(len(line[i]) for line in table) for i in range(len(headers))]
    for index, line in enumerate(table):
        print(
            "  ".join(
                cell.rjust(width) if i else cell.ljust(width) for i, (cell, width) in enumerate(zip(line, widths))
            )
        )
        if index == 0:
            print("  ".join("-" * width for width in widths))


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_targets(rows: list[Row], mixed: Row | None, reference: Row | None) -> bool:
    """Print every target with its measured figure; True when all pass."""
    all_pass = True
    print(f"\ntargets (cost per stream = SIT / (streams x fixed) <= {PER_STREAM_TARGET}):")
    checks = [
        ("fb", "time", "forward+backward time"),
        ("gen", "time", "generation time"),
        ("fb", "memory", "training peak memory"),
        ("gen", "memory", "generation peak memory"),
    ]
    for kind, metric, what in checks:
        ratios = [(row.label, row.per_stream(kind, metric)) for row in rows]
        known = [(label, value) for label, value in ratios if value is not None]
        if not known:
            print(f"  {what:<24} n/a (not measured)")
            continue
        worst_label, worst = max(known, key=lambda item: item[1])
        failing = [label for label, value in known if value > PER_STREAM_TARGET]
        ok = not failing
        all_pass &= ok
        detail = f"worst {worst:.2f} at {worst_label} streams"
        if failing:
            detail += f"; over the target at {', '.join(failing)} streams"
        print(f"  {what:<24} {verdict(ok)}  ({detail})")
    if mixed is not None and reference is not None:
        print(
            f"\ntarget (mixed 1..{MIXED_MAX_SYMBOLS} symbols / all {MIXED_MAX_SYMBOLS}, same lengths, "
            f"forward+backward <= {MIXED_TARGET}):"
        )
        for model in ("sit", "best"):
            mix, full = mixed.seconds.get(f"{model}/fb"), reference.seconds.get(f"{model}/fb")
            if mix is None or full is None:
                continue
            ratio = mix / full
            ideal = mixed.streams / reference.streams
            name = "SIT (EP-DP-CP)" if model == "sit" else "SIT -best (info)"
            line = f"  {name:<24} "
            if model == "sit":
                all_pass &= ratio <= MIXED_TARGET
                line += f"{verdict(ratio <= MIXED_TARGET)}  "
            else:
                line += "      "
            print(line + f"ratio {ratio:.2f} ({_ms(mix)} / {_ms(full)} ms; streams-proportional would be {ideal:.2f})")
            mix_memory, full_memory = mixed.memory.get(f"{model}/fb"), reference.memory.get(f"{model}/fb")
            if mix_memory and full_memory:
                print(f"  {'':<24}       training peak memory ratio {mix_memory / full_memory:.2f}")
            mix_gen, full_gen = mixed.seconds.get(f"{model}/gen"), reference.seconds.get(f"{model}/gen")
            if mix_gen and full_gen:
                # Not a target: generation keeps every sample at the batch's largest stream count.
                print(f"  {'':<24}       generation time ratio {mix_gen / full_gen:.2f} (information)")
    return all_pass


def print_noise_check(rows: list[Row], tolerance: float = 1.2) -> bool:
    """Print how far the fixed model's timings spread; True when they look disturbed.

    The fixed model does the same work in every row (only the symbol ids change), so its spread
    across rows measures what the machine, not the model, added to the timings."""
    times = [row.seconds["fixed/fb"] for row in rows if "fixed/fb" in row.seconds]
    if len(times) < 2:
        return False
    spread = max(times) / min(times)
    disturbed = spread > tolerance
    line = (
        f"noise check: the fixed model's forward+backward spans {_ms(min(times))}-{_ms(max(times))} ms "
        f"across rows doing the same work (x{spread:.2f})"
    )
    if disturbed:
        line += "; DISTURBED: the verdicts are not reliable (other load? try --threads 1 --clock cpu or more --repeats)"
    print(line)
    return disturbed


def print_profile(model: SymbolInvForConditionalGeneration, batch: Batch, rows: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if batch.input_ids.is_cuda else [])
    model.train()
    train_step(model, batch)  # warm: the profile should not show first-call allocation
    with profile(activities=activities) as prof:
        train_step(model, batch)
    sort_by = "self_cuda_time_total" if batch.input_ids.is_cuda else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=sort_by, row_limit=rows, max_name_column_width=48))


# ---------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------
def _select(table: dict[str, T], prefix: str) -> dict[str, T]:
    """The entries of one batch: ``prefix`` marks the mixed batch's jobs, "" the row's own."""
    if prefix:
        return {name[len(prefix) :]: value for name, value in table.items() if name.startswith(prefix)}
    return {name: value for name, value in table.items() if ":" not in name}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--preset",
        default="prop",
        choices=BASE_PRESETS,
        help="SIT preset whose dimensions both models use (default: prop)",
    )
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--batch-size", type=int, default=None, help="default 64 (16 with --quick)")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 3, 2 with --quick)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed rounds first (default 1)")
    parser.add_argument(
        "--streams",
        default=",".join(map(str, DEFAULT_STREAMS)),
        help="comma-separated symbol counts per input (default 1,2,5,10,20)",
    )
    parser.add_argument("--new-tokens", type=int, default=20, help="tokens each greedy generation emits")
    parser.add_argument("--target-length", type=int, default=20, help="label tokens per sample (plus EOS)")
    parser.add_argument(
        "--stat",
        choices=("min", "median"),
        default="min",
        help="how repeats reduce to one figure (default min: other processes only ever "
        "add time, so the fastest round is the least disturbed)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall (default) or cpu: this process's CPU time (user + system), which "
        "other processes on a shared machine do not inflate; CPU device only, "
        "and with several threads it also counts their spinning",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory passes")
    parser.add_argument("--no-best", action="store_true", help="skip the -best preset (information only)")
    parser.add_argument(
        "--profile", action="store_true", help=f"also profile one SIT forward+backward at {MIXED_MAX_SYMBOLS} streams"
    )
    parser.add_argument(
        "--quick", action="store_true", help="batch 16, 2 repeats, no -best model: about a minute on 2 cores"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads (default: torch's choice); 1 keeps timings stable "
        "when other processes share the cores (spinning thread pools otherwise "
        "slow down by large, random factors)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.batch_size = args.batch_size or (16 if args.quick else 64)
    args.repeats = args.repeats if args.repeats is not None else (2 if args.quick else 3)
    args.warmup = args.warmup if args.warmup is not None else 1
    args.no_best = args.no_best or args.quick  # information only: not worth doubling a quick run
    args.streams = sorted({int(value) for value in args.streams.split(",") if value.strip()})
    if not args.streams or min(args.streams) < 1:
        parser.error("--streams needs positive symbol counts")
    if args.clock == "cpu" and args.device != "cpu":
        parser.error("--clock cpu measures host CPU time: use it with --device cpu only")
    if args.repeats < 1 or args.batch_size < 1:
        parser.error("--repeats and --batch-size must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    max_symbols = max(max(args.streams), MIXED_MAX_SYMBOLS)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    models = build_models(args.preset, max_symbols, device, include_best=not args.no_best)
    config = models["sit"].config
    for line in machine_lines(device):
        print(line)
    sizes = ", ".join(
        f"{name} {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M" for name, model in models.items()
    )
    print(
        f"models ({args.preset} dims: d_model {config.d_model}, "
        f"{config.encoder_layers}+{config.decoder_layers} layers, ffn {config.encoder_ffn_dim}): "
        f"SIT = EP-DP-CP streams; fixed = EP-DP-CP, {max_symbols} symbol rows"
        + (f"; best = {args.preset}-best (information, no fixed twin)" if "best" in models else "")
        + f". Parameters: {sizes}"
    )
    print(
        f"batch {args.batch_size}, inputs {MIN_LENGTH}-{MAX_LENGTH} tokens with EOS (random "
        "Polish-notation formulas; k symbols need at least 2k tokens), labels "
        f"{args.target_length}+EOS tokens, greedy generation of {args.new_tokens} tokens with KV cache; "
        f"{args.stat} of {args.repeats} rounds after {args.warmup} warm-up, "
        f"{'process CPU time' if args.clock == 'cpu' else 'wall-clock time'}; "
        "models alternate within each round"
    )
    print("")

    # One set of lengths for every row: rows differ only in how many symbols each input has.
    lengths = [rng.randint(MIN_LENGTH, MAX_LENGTH) for _ in range(args.batch_size)]
    batches = {
        k: to_device(make_batch(config, lengths, [k] * args.batch_size, max_symbols, args.target_length, rng), device)
        for k in sorted(set(args.streams) | {MIXED_MAX_SYMBOLS})
    }
    mixed = to_device(
        make_batch(
            config, lengths, mixed_counts(args.batch_size, MIXED_MAX_SYMBOLS, rng), max_symbols, args.target_length, rng
        ),
        device,
    )

    def jobs_for(batch: Batch, with_generation: bool) -> dict[str, Callable[[], None]]:
        jobs: dict[str, Callable[[], None]] = {}
        for name, model in models.items():
            jobs[f"{name}/fb"] = partial(train_job, model, batch)
            if with_generation:
                jobs[f"{name}/gen"] = partial(generate_job, model, batch, args.new_tokens)
        return jobs

    rows: list[Row] = []
    reference = mixed_row = None
    for k, batch in batches.items():
        started = time.perf_counter()
        shown = k in args.streams  # a reference-only row needs no generation timings
        jobs = jobs_for(batch, with_generation=shown)
        if k == MIXED_MAX_SYMBOLS:
            # The mixed batch runs in the same rounds as its all-10 reference: the ratio then
            # compares measurements taken under the same conditions.
            jobs.update({f"mix:{name}": job for name, job in jobs_for(mixed, with_generation=shown).items()})
        seconds = time_interleaved(jobs, args.warmup, args.repeats, device, args.stat, clock)
        memory: dict[str, int | None] = {}
        if not args.no_memory:
            for name, job in jobs.items():
                for model in models.values():
                    # Free the last step's gradients first: the figure then counts this step's own.
                    model.zero_grad(set_to_none=True)
                memory[name] = peak_bytes(job, device)
        row = Row(str(k), float(k), _select(seconds, ""), _select(memory, ""))
        if shown:
            rows.append(row)
        if k == MIXED_MAX_SYMBOLS:
            reference = row
            mixed_row = Row(
                f"mix 1..{MIXED_MAX_SYMBOLS} (mean {mixed.mean_symbols:.2f})",
                mixed.mean_symbols,
                _select(seconds, "mix:"),
                _select(memory, "mix:"),
            )
        print(f"  measured {k} streams in {time.perf_counter() - started:.0f} s", flush=True)

    print("")
    print(
        f"SIT vs fixed-embedding model, {args.preset} dims, batch {args.batch_size}, device {device}. "
        "Times in ms per batch; x/str = SIT / (streams x fixed)."
    )
    if device.type == "cuda":
        measured = "peak bytes allocated by torch on the GPU above the level before the call"
    else:
        measured = (
            "peak bytes allocated by torch on the CPU during the call above its starting level "
            "(profiler allocation records: activations, gradients, caches, temporaries)"
        )
    print(f"Memory (MiB): {measured}; trMiB = forward+backward, gMiB = generation.")
    print_table(rows + ([mixed_row] if mixed_row is not None else []), "best" in models)
    all_pass = print_targets(rows, mixed_row, reference)
    if hasattr(os, "getloadavg"):
        load = " / ".join(f"{value:.2f}" for value in os.getloadavg())
        print(
            f"\nload average (1/5/15 min) after the run: {load} on {os.cpu_count()} cores "
            "(a load above the core count means other processes shared the CPU)"
        )
    disturbed = print_noise_check(rows)
    print(f"overall: {verdict(all_pass)}" + (" (timings disturbed, see noise check)" if disturbed else ""))

    if args.profile:
        print(
            f"\nprofile: one SIT forward+backward at {MIXED_MAX_SYMBOLS} streams "
            f"(batch {args.batch_size}), top ops by self time"
        )
        print_profile(models["sit"], batches[MIXED_MAX_SYMBOLS], rows=20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
