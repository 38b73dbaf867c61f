"""Training campaigns that short GPU windows advance: each call resumes a run from the state this repository holds.

A GPU is lent here only now and then, for minutes at a time. A campaign turns those windows into one run: each call

1. builds the run's dataset if it is missing (``symbolinv data build``: deterministic, so every machine builds the
   same rows; ``--data-dir`` may point at a copy built elsewhere);
2. restores the last checkpoint kept under ``training_state/RUN/`` (weights, optimizer, scheduler, RNG
   states and the data position; each file verified against the sizes and SHA-256 recorded with it) into the work
   folder ``runs/campaign/RUN``;
3. trains with ``symbolinv train ... --time-limit`` until the time limit, the run's last step or a SIGTERM (``kill
   PID``: the step under way ends and the call goes on as at its time limit);
4. copies the new last checkpoint back into the state folder (see :func:`export_checkpoint`: a kill at any moment
   leaves the old state or the new one, never neither), judges the checkpoint on a fixed validation sample (greedy,
   the first ``EVAL_SAMPLES`` validation formulas) and, once the run is finished, on its test groups with beam 3;
5. appends a line to ``training_state/RUN/log.jsonl``: steps so far, samples per second of this call's
   training, validation correct / exact / invalid, the machine.

``paper_distribution.py --ship RUN`` appends its verdict on each state it judges for release to
``training_state/RUN/judged.jsonl``; ``--results`` writes the calls, the cool-downs and the verdicts into ``LOG.md``.

Run it first whenever a GPU is available, two or three calls per window, and commit the state folder afterwards:

    python benchmarks/gpu_campaign.py --list
    python benchmarks/gpu_campaign.py ltl-small --train-minutes 7      # one call; run again to continue
    python benchmarks/gpu_campaign.py ltl-small --report               # the log as a table, no training
    python benchmarks/gpu_campaign.py --results                        # LOG.md and curves.png of every run

Work without a GPU never needs it; on a CPU it runs the same way (slowly), which is how it is tested. There each
call trains on one thread unless ``--threads N`` (or ``OMP_NUM_THREADS``) says otherwise: two runs then share two
cores without spinning against each other.

A campaign's schedule spans its whole budget, so the weights it keeps are taken at a learning rate near its peak. A
cool-down branches from the kept state and decays that learning rate to zero over a few hundred steps (warm-up,
stable, decay): its model is what ships, while the campaign goes on at its own schedule:

    python benchmarks/gpu_campaign.py prop-35 --cool-down 1200 --train-minutes 100   # again to continue it

A cool-down stopped before its end keeps its checkpoint in the campaign's state folder (``cooldown-FROM-of-STEPS/``, one
at a time, replaced), so that the same command continues it on another machine, also after the campaign has moved on
(the two run side by side); an ended one keeps its model there (``cooldown-FROM-of-STEPS/model/``, without the
optimizer, with its log line in ``cooldown.json``) until the next cool-down, so that ``paper_distribution.py --ship
RUN --cooled`` judges and ships it on any machine; a call stopped between keeping that model and writing the log
(``cooldowns.jsonl``) leaves the line for the next cool-down call to write.

The state folder of a run: ``log.jsonl``; while the run goes on, ``checkpoint-STEP/`` (with the package's record of
its files) and ``current.json``, which names it and is replaced in one atomic rename; once finished,
``trainer_state.json``. (States written before ``current.json`` existed keep their checkpoint in ``checkpoint/``, and
an interrupted write of theirs may have left ``checkpoint.partial/`` or ``checkpoint.previous/``: all are read.) A
damaged state is named, never silently replaced by an older one.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from filelock import FileLock, Timeout
from learning import evaluate_groups, load_for_evaluation, machine, small_tests, train_run

import dataset_builders
from dataset_builders.params import BuildOptions
from hf_symbolinv.commands.train import train_command_line
from hf_symbolinv.evaluation import evaluate_model
from hf_symbolinv.routes import TrainArguments
from hf_symbolinv.training import RECIPE, default_warmup_steps
from hf_symbolinv.training.checkpoints import survey, verify_checkpoint
from hf_symbolinv.utils.files import (
    MANIFEST,
    drop_model_code,
    read_record,
    replace_folder_atomic,
    write_record,
    write_text_atomic,
)
from hf_symbolinv.utils.progress import quiet_off_terminal
from hf_symbolinv.utils.threads import set_torch_threads

REPOSITORY = Path(__file__).resolve().parent.parent
#: The campaigns' resumable states, one folder per run (its kept checkpoint and its log of calls): not results.
STATE_ROOT = REPOSITORY / "training_state"
#: The campaigns' results: the tables and curves written from the runs' logs.
RESULTS_ROOT = REPOSITORY / "benchmarks" / "results" / "campaign"
WORK_ROOT = REPOSITORY / "runs" / "campaign"
#: The most a call may add to the repository: a lent GPU window brings back files of at most 16 MiB and the
#: repository grows by at most 15 MB per window.
STATE_BYTES = 15 * 10**6
OPTIMIZER_FILES = ("optimizer.pt", "scheduler.pt")
EVAL_SAMPLES = 500
#: The file of a state folder that names its checkpoint; replaced atomically, it switches the state from the old
#: checkpoint to the new one.
POINTER = "current.json"
#: The checkpoint folder of a state written before :data:`POINTER` existed, and what its interrupted writes left.
LEGACY, LEGACY_PARTIAL, LEGACY_PREVIOUS = "checkpoint", "checkpoint.partial", "checkpoint.previous"


class StateDamaged(Exception):
    """A state folder that cannot be read as it is; the message is one line naming what is wrong and where."""


@dataclasses.dataclass(frozen=True)
class Campaign:
    """One run: what ``symbolinv train`` is told, and on which data."""

    task: str
    preset: str
    data: str  # a dataset configuration of ``symbolinv data build``
    steps: int
    batch_size: int
    what: str
    num_samples: int | None = None  # None: the configuration's default size
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # further TrainArguments fields
    eval_every: int = 500
    small_tests: bool = False  # judge the finished run on the small-formula test groups (1-3 and 4-8 symbols)
    init_from: str | None = None  # start from this model folder (relative to the repository) instead of ``preset``


#: The wider small prop model: 4x the parameters of ``prop-small`` (1.8M, 3.6 MB in float16).
WIDE = {"d_model": 128, "encoder_ffn_dim": 512, "decoder_ffn_dim": 512}
#: The recipe of the first GPU runs of ``ltl-best`` (2026-11-22): AdaCos and a 100-step warm-up.
OLD_RECIPE = {"overrides": {"loss_type": "adacos"}, "warmup_steps": 100}

#: A run that starts from a trained model: a lower peak learning rate than a new model's, the usual warm-up.
FROM_SHIPPED = {"lr": 5e-4, "warmup_steps": 1000}
#: The runs on the paper's distributions pass over their 160,000 training formulas dozens of times (the paper's budget
#: is 320 passes): from 2026-11-28 on (prop-35 from step 12,467, ltl-35 from 11,025) each draw writes the formula
#: anew (``--augment commute``), as the shipped cool-downs of prop-35 were trained. Why: cool-downs from one step
#: trained both ways ended at a validation loss 10% (prop) and 1.4% (LTL) below the plain ones, and without dropout
#: the runs learned their pool by heart twice as fast (benchmarks/results/paper_distribution/).
PAPER_RUN = {**FROM_SHIPPED, "augment": "commute"}

CAMPAIGNS: dict[str, Campaign] = {
    "prop-small": Campaign(
        "prop", "prop-small", "prop-small", 6000, 256, "prop-small (d_model 64, 3 + 3 layers)", small_tests=True
    ),
    "prop-small-wide": Campaign(
        "prop",
        "prop-small",
        "prop-small",
        6000,
        256,
        "prop-small at d_model 128",
        options={"overrides": WIDE},
        small_tests=True,
    ),
    "prop-small-deep": Campaign(
        "prop",
        "prop-small",
        "prop-small",
        10000,
        256,
        "prop-small at d_model 128 and 6 + 6 layers (the next step after width helped: 61.7% -> 72.8%)",
        options={"overrides": {**WIDE, "encoder_layers": 6, "decoder_layers": 6}},
        small_tests=True,
    ),
    "ltl-small": Campaign(
        "ltl", "ltl-small", "ltl-small", 6000, 256, "ltl-small (d_model 64, 3 + 3 layers)", small_tests=True
    ),
    "ltl-best": Campaign(
        "ltl",
        "ltl-best",
        "ltl-35",
        52000,
        768,
        "ltl-best, the paper's 52,000 steps of batch 768, the package's recipe (cross-entropy, 1,000 warm-up steps)",
        num_samples=200_000,
        eval_every=250,
    ),
    # The paper's distributions at the paper's budget (50,000 steps of 1,024 = 100,000 of 512), continued across
    # sittings on 2 CPU cores and on GPUs when lent. Small models (finding 7: at equal compute more steps beat
    # size), started from the shipped small models, which already answer 84% of the paper's distributions.
    "prop-35": Campaign(
        "prop",
        "prop-small",
        "prop-35",
        100_000,
        512,
        "prop-small (0.45M) from the shipped prop-small, on prop-35 at the paper's budget (100,000 steps of 512)",
        num_samples=200_000,
        options=PAPER_RUN,
        init_from="hf_symbolinv/pretrained/prop-small",
    ),
    "ltl-35": Campaign(
        "ltl",
        "ltl-small",
        "ltl-35",
        100_000,
        512,
        "ltl-small (0.40M) from the shipped ltl-small, on ltl-35 at the paper's budget (100,000 steps of 512)",
        num_samples=200_000,
        options=PAPER_RUN,
        init_from="hf_symbolinv/pretrained/ltl-small",
    ),
    "ltl-best-old-recipe": Campaign(
        "ltl",
        "ltl-best",
        "ltl-35",
        2000,
        768,
        "ltl-best with the recipe of the first GPU runs (AdaCos, 100 warm-up steps), to see the collapse again",
        num_samples=200_000,
        options=OLD_RECIPE,
        eval_every=250,
    ),
}


def checkpoint_step(folder: Path) -> int:
    return int(folder.name.rpartition("-")[2])


def last_checkpoint(checkpoints: Path) -> Path | None:
    """The newest sound checkpoint of a work folder (each file verified); damaged ones are passed over."""
    return survey(checkpoints).newest_sound() if checkpoints.is_dir() else None


def _trainer_step(folder: Path) -> int:
    path = folder / "trainer_state.json"
    try:
        return int(json.loads(path.read_text())["global_step"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        reason = error.strerror if isinstance(error, OSError) else str(error).splitlines()[0]
        raise StateDamaged(f"{path} is damaged or missing ({reason})") from None


def state_folder(name: str) -> Path:
    """The resumable state of the run ``name``: ``training_state/NAME``; a state still kept where states were kept
    before (``benchmarks/results/campaign/NAME``, a run started before they moved) is read, and continued, there."""
    folder, earlier = STATE_ROOT / name, RESULTS_ROOT / name
    if not folder.exists() and ((earlier / "log.jsonl").is_file() or (earlier / "checkpoint").is_dir()):
        return earlier
    return folder


def kept_checkpoint(state: Path) -> Path | None:
    """The checkpoint folder the state folder ``state`` holds (None: none), verified; :class:`StateDamaged` if it is
    damaged (never an older checkpoint instead)."""
    pointer = state / POINTER
    if pointer.exists():
        try:
            name = json.loads(pointer.read_text())["checkpoint"]
            if not (isinstance(name, str) and name.startswith("checkpoint-") and "/" not in name):
                raise ValueError(f"it names {name!r}")
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise StateDamaged(f"{pointer} is damaged ({str(error).splitlines()[0]})") from None
        candidate = state / name
    elif (state / LEGACY).is_dir():
        candidate = state / LEGACY
    elif (state / LEGACY_PARTIAL).is_dir() and (state / LEGACY_PREVIOUS).is_dir():
        # Killed between the two renames of the old write: the new copy was complete, the old one moved aside.
        candidate = state / LEGACY_PARTIAL
    elif (state / LEGACY_PREVIOUS).is_dir():
        candidate = state / LEGACY_PREVIOUS
    else:
        return None
    if not candidate.is_dir():
        raise StateDamaged(f"{pointer} names {candidate.name}, which is not there")
    problem = verify_checkpoint(candidate)
    if problem is not None:
        raise StateDamaged(
            f"the state checkpoint {candidate} is {problem}; it is not replaced by an older one: restore it (e.g. from "
            "version control) or remove it to start the run again"
        )
    return candidate


def state_step(state: Path) -> int:
    """The global step of the checkpoint kept in ``state`` (0 when there is none)."""
    kept = kept_checkpoint(state)
    return _trainer_step(kept) if kept is not None else 0


def export_checkpoint(checkpoint: Path, state: Path) -> tuple[int, bool]:
    """Copy ``checkpoint`` into ``state/checkpoint-STEP`` with a record of its files (sizes and SHA-256), then switch
    ``state/current.json`` to it in one atomic rename, then remove the checkpoint kept before: a kill at any moment
    leaves the old state or the new one. A checkpoint larger than :data:`STATE_BYTES` is kept without its optimizer
    and scheduler states: the next call then restarts Adam's moments and warms the learning rate up again (the
    Trainer loads neither state when one is missing). Returns the bytes written and whether the optimizer state was
    kept."""
    problem = verify_checkpoint(checkpoint)
    if problem is not None:
        raise StateDamaged(f"{checkpoint} is {problem}; it is not kept")
    files = state_files(checkpoint)
    keep_optimizer = sum(path.stat().st_size for path in files) <= STATE_BYTES
    if not keep_optimizer:
        files = [path for path in files if path.name not in OPTIMIZER_FILES]
    name = f"checkpoint-{checkpoint_step(checkpoint)}"
    staging = state / f".{name}.partial"
    if staging.exists():
        shutil.rmtree(staging)  # a copy this script left unfinished
    staging.mkdir(parents=True)
    copy_kept(files, staging)
    written = sum(path.stat().st_size for path in staging.iterdir())  # the copies, as kept (code entries dropped)
    record = read_record(checkpoint) or {}
    write_record(staging, options=record.get("options"))  # the copies' sizes and SHA-256, written last
    if (state / name).exists():
        shutil.rmtree(state / name)  # an earlier copy of the same step that no pointer names
    staging.rename(state / name)
    write_text_atomic(state / POINTER, json.dumps({"checkpoint": name, "step": checkpoint_step(checkpoint)}) + "\n")
    remove_stale(state)
    return written, keep_optimizer


def state_files(folder: Path) -> list[Path]:
    """The files of ``folder`` (a checkpoint or a saved model) that a state keeps: not the copies of the model code
    saved beside the weights (the package registers the classes, and a second copy of its code in the repository
    would go stale), nor the pickled training arguments (a resume takes them from the command line), nor a saved
    model's card (it names the folder of the machine that saved it; a release writes its own)."""
    return sorted(
        path
        for path in folder.iterdir()
        if path.is_file() and path.suffix != ".py" and path.name not in (MANIFEST, "training_args.bin", "README.md")
    )


def copy_kept(files: list[Path], staging: Path) -> None:
    """Copy ``files`` (of :func:`state_files`, which leaves the code copies out) into ``staging``, without the config
    and tokenizer entries that point at that code: a kept folder claims no code it does not hold, and loads with the
    package's classes."""
    for source in files:
        shutil.copy2(source, staging / source.name)
    drop_model_code(staging)


def keep_model(model: Path, target: Path, ended: dict[str, Any]) -> int:
    """Copy the saved model folder ``model`` into ``target`` (replaced in one swap, with its record), without the
    code copies and the config entries that point at them: it loads with the package's classes. The cool-down's log
    line ``ended`` goes into the same swap (:data:`ENDED_RECORD`). The bytes kept."""

    def fill(staging: Path) -> None:
        copy_kept(state_files(model), staging)
        (staging / ENDED_RECORD).write_text(json.dumps(ended, default=str) + "\n")

    replace_folder_atomic(target, fill)
    return kept_bytes(target)


def kept_bytes(folder: Path) -> int:
    """The bytes of the files a kept folder holds, its record of them left out."""
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file() and path.name != MANIFEST)


def drop_checkpoints(state: Path) -> None:
    """Remove the checkpoint the state folder ``state`` keeps, with its pointer and any copies left beside it."""
    (state / POINTER).unlink(missing_ok=True)
    for path in state.iterdir():
        if path.is_dir() and not path.is_symlink() and path.name.startswith(("checkpoint", ".checkpoint-")):
            shutil.rmtree(path)


def remove_stale(state: Path) -> None:
    """Remove what earlier writes of the state left beside the checkpoint :data:`POINTER` names: copies cut short,
    checkpoints it replaced, the old layout's folders. Only once the pointer names a sound checkpoint."""
    if not (state / POINTER).is_file():
        return
    current = kept_checkpoint(state)
    for path in state.iterdir():
        stale = path.name in (LEGACY, LEGACY_PARTIAL, LEGACY_PREVIOUS) or (
            path.name.startswith((".checkpoint-", "checkpoint-")) and path != current
        )
        if stale and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)


def restore_checkpoint(state: Path, checkpoints: Path) -> Path:
    """Copy the checkpoint kept in ``state`` to ``checkpoints/checkpoint-STEP``, where the Trainer resumes from."""
    kept = kept_checkpoint(state)
    target = checkpoints / f"checkpoint-{_trainer_step(kept)}"
    staging = checkpoints / f".{target.name}.partial"
    for stale in (staging, target):
        if stale.exists():
            shutil.rmtree(stale)
    shutil.copytree(kept, staging)
    staging.rename(target)
    return target


def log_entries(state: Path, log_name: str = "log.jsonl") -> list[dict[str, Any]]:
    log = state / log_name
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def finish(state: Path) -> None:
    """A finished run keeps its log and its Trainer history, not its checkpoint (the weights that matter are
    shipped or saved as a model; the optimizer state is of no further use)."""
    checkpoint = kept_checkpoint(state)
    if checkpoint is not None:
        history_text = (checkpoint / "trainer_state.json").read_text()
        write_text_atomic(state / "trainer_state.json", history_text)
        drop_checkpoints(state)


def train_options(
    campaign: Campaign, data: Path, work: Path, minutes: float, workers: int, compile_backend: str | None = None
) -> TrainArguments:
    """What one call trains with: the campaign's run for ``minutes``, continued from ``work``'s checkpoint."""
    on_gpu = torch.cuda.is_available()
    return TrainArguments(
        task=campaign.task,
        preset=None if campaign.init_from else campaign.preset,
        init_from=str(REPOSITORY / campaign.init_from) if campaign.init_from else None,
        data=str(data),
        output=str(work),
        steps=campaign.steps,
        batch_size=campaign.batch_size,
        eval_steps=campaign.eval_every,
        eval_samples=256,
        beam=1,
        time_limit=minutes,
        workers=workers,
        bf16=on_gpu,  # on a CPU, bf16 autocast is slower (0.57x: benchmarks/results/speed_train_speed/)
        compile=compile_backend,
        # Batches grouped by streams and length waste little on padding, on a CPU too (1.3x the samples/s of random
        # batches of 512: benchmarks/results/speed_train_speed/). Compiled, random batches of a campaign's size nearly
        # all pad to the largest bucket (few graphs), while grouped ones would spread over every bucket, each compiled
        # in the window's first minutes.
        group_by_length=compile_backend is None,
        **campaign.options,
    )


def train_arguments(
    campaign: Campaign, data: Path, work: Path, minutes: float, workers: int, compile_backend: str | None = None
) -> list[str]:
    """The ``symbolinv train`` command (after ``symbolinv``) that one call's training is: for logs and cards."""
    return train_command_line(train_options(campaign, data, work, minutes, workers, compile_backend))


def split_scores(checkpoint: Path, task: str, data: Path, split_names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Correct / exact / invalid of ``checkpoint`` (greedy) on the first :data:`EVAL_SAMPLES` formulas of each of
    ``split_names``, the model loaded once."""
    from datasets import load_dataset

    model, tokenizer = load_for_evaluation(checkpoint)
    scores = {}
    for name in split_names:
        split = load_dataset(str(data), split=name)
        split = split.select(range(min(EVAL_SAMPLES, len(split))))
        report = evaluate_model(
            model,
            tokenizer,
            task,
            list(split["input"]),
            list(split["target"]),
            num_beams=1,
            batch_size=256,
            alpha_symbol_counts=(),
            progress=False,
        )
        scores[name] = {key: report.to_dict()[key] for key in ("count", "correct", "exact", "invalid")}
    return scores


def last_losses(checkpoint: Path) -> dict[str, float]:
    """The last training and validation loss in the checkpoint's Trainer log."""
    history = json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
    found: dict[str, float] = {}
    for entry in history:
        if "loss" in entry:
            found["train_loss"] = entry["loss"]
        if "eval_loss" in entry:
            found["eval_loss"] = entry["eval_loss"]
    return found


def device_name() -> str:
    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    return machine()


def progress(name: str) -> int:
    """Steps of ``name`` done so far: its last logged call (its checkpoint, if a call died before logging)."""
    state = state_folder(name)
    entries = log_entries(state)
    return max(entries[-1]["step"] if entries else 0, state_step(state))


def run_call(name: str, args: argparse.Namespace) -> dict[str, Any]:
    campaign = CAMPAIGNS[name]
    state, work = state_folder(name), WORK_ROOT / name
    if progress(name) >= campaign.steps:
        raise SystemExit(f"error: campaign {name} is finished ({campaign.steps:,} steps); see {state / 'log.jsonl'}")
    # Before any work: a state that cannot be resumed is named at once.
    checkpoints = work / "checkpoints"
    held = last_checkpoint(checkpoints)
    held_step = checkpoint_step(held) if held is not None else 0
    kept_step = state_step(state)
    entries = log_entries(state)
    logged = entries[-1]["step"] if entries else 0
    if max(kept_step, held_step) < logged:
        # The log is written after the state: a state behind it lost its checkpoint (never silently start older).
        raise StateDamaged(
            f"the state of {name} in {state} holds step {kept_step:,} while its log reached step {logged:,}: restore "
            f"its checkpoint (e.g. from version control), or remove the log's later lines to go on from {kept_step:,}"
        )
    data = campaign_data(campaign, args)
    remove_stale(state)
    if kept_step > held_step:
        restore_checkpoint(state, checkpoints)
        print(f"{name}: resuming from step {kept_step} (the state kept in {state})", flush=True)
    start_step = max(kept_step, held_step)
    arguments = train_options(campaign, data, work, args.train_minutes, args.workers, args.compile)
    checkpoint, seconds = train_call(name, state, arguments)
    step = checkpoint_step(checkpoint)
    written, optimizer_kept = export_checkpoint(checkpoint, state) if step > state_step(state) else (0, True)
    entry = call_entry(
        campaign,
        checkpoint,
        campaign.steps,
        start_step,
        seconds,
        data,
        state_bytes=written,
        optimizer_kept=optimizer_kept,
        compiled=args.compile,
        augment=campaign.options.get("augment", "none"),
    )
    log = state / "log.jsonl"
    previous = append_line(log, entry)
    print(json.dumps({"run": name, **entry}, default=str), flush=True)
    if step >= campaign.steps:
        if campaign.small_tests:
            # Written after the line above, so that a call stopped during these tests still keeps its line.
            tests = small_tests(args.data_dir, campaign.task, args.test_samples)
            entry["test_beam3"] = evaluate_groups(checkpoint, campaign.task, tests, beam=3)
            write_text_atomic(log, previous + json.dumps(entry, default=str) + "\n")
            print(json.dumps({"run": name, "test_beam3": entry["test_beam3"]}, default=str), flush=True)
        finish(state)
        print(f"{name}: finished; the model is in {work / 'model'}", flush=True)
    return entry


def campaign_data(campaign: Campaign, args: argparse.Namespace) -> Path:
    """The campaign's dataset folder under ``--data-dir``, built first if it is missing."""
    data = args.data_dir / campaign.data
    options = BuildOptions(num_samples=campaign.num_samples, workers=args.build_workers, progress=False)
    dataset_builders.build(campaign.data, data, options, wait_seconds=dataset_builders.SHARED_WAIT_SECONDS)
    return data


def train_call(name: str, state: Path, arguments: TrainArguments) -> tuple[Path, float]:
    """Train with ``arguments`` (``symbolinv train``; its one-line refusals stay one line, naming the run): the last
    checkpoint it left and the seconds it took."""
    try:
        seconds = 60 * train_run(arguments, name)
    except SystemExit as stop:
        if isinstance(stop.code, str):
            raise SystemExit(f"error: {stop.code}; the state in {state} is as it was") from stop
        raise
    checkpoints = Path(arguments.output) / "checkpoints"
    checkpoint = last_checkpoint(checkpoints)
    if checkpoint is None:
        raise SystemExit(f"{name}: training wrote no checkpoint to {checkpoints}")
    return checkpoint, seconds


def call_entry(
    campaign: Campaign,
    checkpoint: Path,
    of: int,
    start_step: int,
    seconds: float,
    data: Path,
    augment: str = "none",
    **details: Any,
) -> dict[str, Any]:
    """The log line of one call that trained from ``start_step`` to ``checkpoint`` (of ``of`` steps) in ``seconds``:
    when, where, how fast, ``details``, the losses and ``checkpoint``'s validation scores, and its scores on as many
    training formulas: where these stay level with the validation's, the run is not learning its pool by heart (a
    campaign sees each training formula dozens of times)."""
    step = checkpoint_step(checkpoint)
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")  # when training ended, before judging
    scores = split_scores(checkpoint, campaign.task, data, ("validation", "train"))
    return {
        "date": date,
        "device": device_name(),
        "step": step,
        "of": of,
        "batch_size": campaign.batch_size,
        "samples_per_second": round((step - start_step) * campaign.batch_size / seconds, 1),
        "call_minutes": round(seconds / 60, 2),
        **details,
        **({"augment": augment} if augment != "none" else {}),  # trained on rewritten samples (``--augment``)
        **last_losses(checkpoint),
        "validation": scores["validation"],
        "training_formulas": scores["train"],
    }


def append_line(log: Path, entry: dict[str, Any]) -> str:
    """Append ``entry`` to the JSON-lines file ``log`` (the whole file written again atomically); returns the text
    it had before."""
    previous = log.read_text() if log.is_file() else ""
    write_text_atomic(log, previous + json.dumps(entry, default=str) + "\n")
    return previous


#: A cool-down starts a new optimizer (it keeps the campaign's weights only): a short warm-up settles Adam's moments.
COOLDOWN_WARMUP = 25
#: The log of a campaign's cool-downs, in its state folder.
COOLDOWN_LOG = "cooldowns.jsonl"
#: The verdicts on a campaign's states judged for release (``paper_distribution.py --ship``), in its state folder.
JUDGED_LOG = "judged.jsonl"


def scheduled_lr(campaign: Campaign, step: int) -> float:
    """The campaign's learning rate at ``step`` (the recipe's schedule, as ``symbolinv train`` runs it), to two
    significant digits: where its cool-downs start."""
    from transformers import get_scheduler

    peak = campaign.options.get("lr", TrainArguments.lr)
    warmup = campaign.options.get("warmup_steps") or default_warmup_steps(campaign.steps)
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=peak)
    schedule = get_scheduler(RECIPE["lr_scheduler_type"], optimizer, warmup, campaign.steps)
    return float(f"{peak * schedule.lr_lambdas[0](step):.2g}")


def cooldown_name(from_step: int, steps: int, augment: str = "none") -> str:
    """The name of the cool-down from step ``from_step`` over ``steps`` (with ``augment``): its work folder's and its
    kept state's. By its length too: a cool-down of another length from the same step has its own schedule, so it
    resumes none of this one's checkpoints; with ``augment``, the same branch trained on rewritten samples, to compare
    with the plain one."""
    return f"cooldown-{from_step}-of-{steps}" + (f"-{augment}" if augment != "none" else "")


def cooldown_folder(name: str, from_step: int, steps: int, augment: str = "none") -> Path:
    """The work folder of the cool-down of campaign ``name`` (:func:`cooldown_name`)."""
    return WORK_ROOT / f"{name}-{cooldown_name(from_step, steps, augment)}"


def cooldown_state(state: Path, from_step: int, steps: int, augment: str = "none") -> Path:
    """Where campaign state ``state`` keeps its cool-down from ``from_step`` over ``steps`` (with ``augment``): its
    last checkpoint, so that a cool-down longer than a sitting continues on another machine, and once it has ended its
    model (:data:`ENDED_MODEL`), so that the model is judged and shipped on any machine. One at a time: the next
    cool-down of the campaign replaces it."""
    return state / cooldown_name(from_step, steps, augment)


#: The folder of an ended cool-down's state that keeps its model: the weights, config and tokenizer, without the code
#: or the saved card.
ENDED_MODEL = "model"
#: The ended cool-down's log line, kept in its model folder: written in the same swap as the model, it is the line's
#: copy that :func:`log_ended_cooldowns` writes into the log where a call was stopped between the two.
ENDED_RECORD = "cooldown.json"


def keep_cooldown(
    state: Path,
    branch: Path,
    checkpoint: Path | None = None,
    model: Path | None = None,
    ended: dict[str, Any] | None = None,
) -> int:
    """Keep the cool-down state ``branch`` of campaign state ``state``: its last ``checkpoint`` while it runs, or its
    ``model`` with its log line ``ended`` once it has ended (no checkpoint then: its optimizer state is of no further
    use); then remove every other cool-down state. Returns the bytes written."""
    if (checkpoint is None) == (model is None) or (model is None) != (ended is None):
        raise ValueError("a cool-down keeps its checkpoint, or its model and its log line")
    if checkpoint is not None:
        written = export_checkpoint(checkpoint, branch)[0]
    else:
        written = keep_model(model, branch / ENDED_MODEL, ended)
        drop_checkpoints(branch)
    for path in cooldown_states(state):
        if path != branch:
            shutil.rmtree(path)
    return written


def cooldown_states(state: Path) -> list[Path]:
    """The cool-down states that campaign state ``state`` holds (folders ``cooldown-*``; a link is never one)."""
    return [path for path in state.glob("cooldown-*") if path.is_dir() and not path.is_symlink()]


def cooldown_options(
    campaign: Campaign, kept: Path, from_step: int, steps: int, data: Path, work: Path, args: argparse.Namespace
) -> TrainArguments:
    """A cool-down's training: the campaign's (batch, data, evaluation), from the weights of its kept checkpoint
    ``kept`` (of step ``from_step``), ``steps`` steps from the campaign's learning rate there down to zero."""
    return dataclasses.replace(
        train_options(campaign, data, work, args.train_minutes, args.workers, args.compile),
        preset=None,
        init_from=str(kept),
        overrides={},  # the shape is the saved model's
        steps=steps,
        lr=scheduled_lr(campaign, from_step),
        warmup_steps=COOLDOWN_WARMUP,
        warmup_ratio=None,
        eval_steps=max(1, steps // 4),
        augment=cooldown_augment(campaign, args),
    )


def cooldown_augment(campaign: Campaign, args: argparse.Namespace) -> str:
    """How a cool-down's samples are written: as ``--augment`` says, else as the campaign's own training writes them."""
    return args.augment if args.augment is not None else campaign.options.get("augment", "none")


def run_cooldown(name: str, steps: int, args: argparse.Namespace) -> dict[str, Any] | None:
    """One call of a cool-down of campaign ``name``: from its kept checkpoint, trained for ``args.train_minutes``; a
    line in ``COOLDOWN_LOG`` (None: the cool-down had already ended, and nothing is trained or logged). A cool-down of
    this length that stopped before its end continues, even where the campaign has moved on since it branched (the two
    run side by side); once it has ended, the next call branches from the campaign's new step."""
    campaign = CAMPAIGNS[name]
    state = state_folder(name)
    kept = kept_checkpoint(state)
    augment = cooldown_augment(campaign, args)
    log_ended_cooldowns(state)
    under_way = unfinished_cooldown(state, steps, augment)
    if kept is None and under_way is None:
        raise SystemExit(
            f"error: campaign {name} keeps no checkpoint in {state} to cool down (not started, or finished: its "
            "schedule has already reached zero)"
        )
    if steps <= COOLDOWN_WARMUP:
        raise SystemExit(
            f"error: --cool-down {steps}: a cool-down takes more steps than its warm-up ({COOLDOWN_WARMUP})"
        )
    campaign_step = _trainer_step(kept) if kept is not None else None
    from_step = under_way if under_way is not None else campaign_step
    if from_step != campaign_step:
        where = (
            f"the campaign is at step {campaign_step:,}: the next cool-down branches from there once this one has ended"
            if campaign_step is not None
            else "the campaign has finished and keeps no checkpoint to branch from"
        )
        print(
            f"{name}: the cool-down from step {from_step:,} stopped before its end; it continues ({where})", flush=True
        )
    work = cooldown_folder(name, from_step, steps, augment)
    branch = cooldown_state(state, from_step, steps, augment)
    held = last_checkpoint(work / "checkpoints")
    start_step = checkpoint_step(held) if held is not None else 0
    if state_step(branch) > start_step:  # stopped on another machine (or this one's work folder was removed)
        start_step = checkpoint_step(restore_checkpoint(branch, work / "checkpoints"))
        print(f"{name}: the cool-down resumes from its step {start_step:,} (the state kept in {branch})", flush=True)
    # Ended, by its checkpoint here or by its log line from any machine: another call would train past the end of its
    # schedule, or run it a second time from step 0 where its work folder is not.
    logged = ended_cooldown(state, from_step, steps, augment)
    model = REPOSITORY / logged["model"] if logged is not None else work / "model"  # in the state, or where it ended
    if start_step >= steps or logged is not None:
        if not model.is_dir():
            when = f"on {logged['date'][:16]} ({state / COOLDOWN_LOG})" if logged else f"at step {start_step:,}"
            raise SystemExit(
                f"error: the cool-down of {name} from step {from_step:,} over {steps:,} steps ended {when}, but "
                f"{model} is not here: nothing to train (a later cool-down replaced it, or it is on the machine it "
                "ended on)"
            )
        print(f"{name}: the cool-down from step {from_step:,} had ended; the model is in {model}", flush=True)
        return None
    data = campaign_data(campaign, args)
    # Continued after the campaign moved on, the branch starts from its own checkpoint (the Trainer resumes it anyway):
    # the campaign's checkpoint it branched from is no longer kept.
    start = kept if from_step == campaign_step else last_checkpoint(work / "checkpoints")
    arguments = cooldown_options(campaign, start, from_step, steps, data, work, args)
    print(
        f"{name}: cooling down from step {from_step:,} (learning rate {arguments.lr:g} to 0 over {steps:,} steps)",
        flush=True,
    )
    checkpoint, seconds = train_call(f"the cool-down of {name}", state, arguments)
    step = checkpoint_step(checkpoint)
    entry = call_entry(
        campaign, checkpoint, steps, start_step, seconds, data, from_step=from_step, lr=arguments.lr, augment=augment
    )
    if step >= steps:  # the log names the copy in the state, which every machine has
        kept_model = branch / ENDED_MODEL
        entry["model"] = str(
            kept_model.relative_to(REPOSITORY) if kept_model.is_relative_to(REPOSITORY) else kept_model
        )
        entry["state_bytes"] = keep_cooldown(state, branch, model=model, ended=dict(entry))
        model = kept_model
    else:
        entry["state_bytes"] = keep_cooldown(state, branch, checkpoint)
    append_line(state / COOLDOWN_LOG, entry)
    print(json.dumps({"run": name, "cool_down": entry}, default=str), flush=True)
    if step < steps:
        print(f"{name}: the cool-down stopped at step {step:,} of {steps:,}; the same command continues it")
    else:
        print(f"{name}: the cool-down finished; the model is in {model}", flush=True)
    return entry


def log_ended_cooldowns(state: Path) -> None:
    """Write into campaign state ``state``'s cool-down log the line of each ended cool-down it keeps whose line is
    not there (the call that ended it was stopped after keeping its model, before writing its log)."""
    for branch in cooldown_states(state):
        record = branch / ENDED_MODEL / ENDED_RECORD
        if not record.is_file():
            continue
        try:  # only the record itself: a damaged log is the log's fault, not the record's
            entry = json.loads(record.read_text())
            which = (entry["from_step"], entry["of"], entry.get("augment", "none"))
        except (ValueError, KeyError, TypeError) as error:
            raise StateDamaged(f"{record} is damaged ({str(error).splitlines()[0]})") from None
        if ended_cooldown(state, *which) is None:
            entry["state_bytes"] = kept_bytes(branch / ENDED_MODEL)
            append_line(state / COOLDOWN_LOG, entry)
            print(
                f"the cool-down from step {entry['from_step']:,} over {entry['of']:,} steps ended on "
                f"{str(entry['date'])[:16]} without its log line (its call was stopped as it wrote it): written now "
                f"into {state / COOLDOWN_LOG}",
                flush=True,
            )


def unfinished_cooldown(state: Path, steps: int, augment: str) -> int | None:
    """The step that campaign state ``state``'s cool-down over ``steps`` (with ``augment``) branched from, where one
    stopped before its end and keeps its checkpoint there (None: none does)."""
    for path in cooldown_states(state):
        found = re.fullmatch(r"cooldown-(\d+)-of-\d+(?:-\w+)?", path.name)
        if found is None:
            continue
        from_step = int(found[1])
        if path.name == cooldown_name(from_step, steps, augment) and kept_checkpoint(path) is not None:
            return from_step
    return None


def ended_cooldown(state: Path, from_step: int, steps: int, augment: str) -> dict[str, Any] | None:
    """The log line of campaign state ``state``'s cool-down from ``from_step`` over ``steps`` (with ``augment``) that
    ended, wherever it ran (None: it has not ended)."""
    for entry in log_entries(state, COOLDOWN_LOG):
        same = (entry["from_step"], entry["of"], entry.get("augment", "none")) == (from_step, steps, augment)
        if same and "model" in entry:
            return entry
    return None


def finished_cooldown(name: str) -> dict[str, Any] | None:
    """The newest finished cool-down of campaign ``name`` whose model is on this machine (None: none)."""
    for entry in reversed(log_entries(state_folder(name), COOLDOWN_LOG)):
        if "model" in entry and (REPOSITORY / entry["model"]).is_dir():
            return entry
    return None


def history(name: str) -> list[dict[str, Any]]:
    """The Trainer's log of the campaign so far (training and validation loss, validation correct per step)."""
    state = state_folder(name)
    kept = kept_checkpoint(state)
    for path in ([kept / "trainer_state.json"] if kept is not None else []) + [state / "trainer_state.json"]:
        if path.is_file():
            try:
                return json.loads(path.read_text())["log_history"]
            except (ValueError, KeyError, TypeError) as error:
                raise StateDamaged(f"{path} is damaged ({str(error).splitlines()[0]})") from None
    return []


def log_row(entry: dict[str, Any], *cells: str) -> str:
    """A logged call as a row of ``LOG.md``: date, device, ``cells``, step, samples/s, losses, validation correct,
    correct on as many training formulas (measured from 2026-11-27 on; a dash before). A loss the call did not
    reach (a cool-down stopped before its first evaluation) is a dash too."""
    validation, training = entry["validation"], entry.get("training_formulas")
    return (
        "| "
        + " | ".join(
            [
                entry["date"][:16],
                entry["device"].split(",")[0],
                *cells,
                f"{entry['step']:,} of {entry['of']:,}"
                # A campaign's own call on rewritten formulas (a cool-down says so in its branch step's cell).
                + (f" (`--augment {entry['augment']}`)" if "augment" in entry and "from_step" not in entry else ""),
                f"{entry['samples_per_second']:,.0f}",
                *(f"{entry[loss]:.3f}" if loss in entry else "-" for loss in ("train_loss", "eval_loss")),
                f"{100 * validation['correct']:.1f}% of {validation['count']}",
                f"{100 * training['correct']:.1f}%" if training else "-",
            ]
        )
        + " |"
    )


def augmented_step(entry: dict[str, Any]) -> str:
    """A cool-down's branch step, marked with its ``--augment`` where it was trained on rewritten samples."""
    return f"{entry['from_step']:,}" + (f" (`--augment {entry['augment']}`)" if "augment" in entry else "")


def log_table(name: str) -> str:
    rows = [
        f"### `{name}`: {CAMPAIGNS[name].what}",
        "",
        "| date (UTC) | device | step | samples/s | train loss | validation loss | validation correct (greedy) | "
        "training formulas correct (as many) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows += [log_row(entry) for entry in log_entries(state_folder(name))]
    cooldowns = log_entries(state_folder(name), COOLDOWN_LOG)
    if cooldowns:
        rows += [
            "",
            f"Cool-downs of `{name}` (`--cool-down STEPS`: from the kept step, the learning rate decayed to zero):",
            "",
            "| date (UTC) | device | from step | learning rate | step | samples/s | train loss | validation loss | "
            "validation correct (greedy) | training formulas correct (as many) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        rows += [log_row(entry, augmented_step(entry), f"{entry['lr']:g}") for entry in cooldowns]
    judged = log_entries(state_folder(name), JUDGED_LOG)
    if judged:
        rows += ["", *judged_table(name, judged)]
    return "\n".join(rows)


def judged_table(name: str, judged: list[dict[str, Any]]) -> list[str]:
    """The states of ``name`` judged for release, one row each: the choice tables set against each other, the
    verdict, and the test figures where they were read."""
    rows = [
        f"States of `{name}` judged for release (`python benchmarks/paper_distribution.py --ship {name} --name NAME`, "
        "with `--cooled` for a cool-down): the choice table (beam 3, the first validation formulas, the weights "
        "rounded to float16) against the shipped model's; a tie keeps the shipped model."
        + (
            " Rows marked * were entered from the release history kept in the docs before `--ship` logged its "
            "verdicts; their dates are those of the judged states, and their test figures were read under the rule "
            "of the day (before 2026-12-04 a cool-down's test split was measured whatever its verdict)."
            if any(entry.get("from_history") for entry in judged)
            else ""
        ),
        "",
        "| date (UTC) | state judged | choice table | shipped model's | verdict | test (beam 3) | 10 symbols |",
        "|---|---|---|---|---|---|---|",
    ]
    for entry in judged:
        (hits, count), shipped = entry["choice"], entry["shipped_choice"]
        state = (
            f"{entry['step']:,}"
            if "step" in entry
            else f"cooled down from {augmented_step(entry)} over {entry['of']:,} steps"
        )
        if entry["shipped"]:
            verdict = f"**shipped** as `{entry['name']}`"
        elif shipped is not None and shipped[0] == hits:
            verdict = "not shipped (level)"
        else:
            verdict = "not shipped"
        cells = [
            entry["date"][:16] + (" *" if entry.get("from_history") else ""),
            state,
            f"{100 * hits / count:.1f}% ({hits:,} of {count:,})",
            f"{100 * shipped[0] / shipped[1]:.1f}%" if shipped is not None else "none shipped",
            verdict,
            *(f"{100 * entry[key]:.1f}%" if key in entry else "-" for key in ("test", "test_10sym")),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def write_results() -> None:
    """``LOG.md`` (every campaign's calls) and ``curves.png`` (validation correct and loss against step)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [name for name in CAMPAIGNS if log_entries(state_folder(name))]
    text = (
        "# Campaign log\n\nWritten by `python benchmarks/gpu_campaign.py --results` from each run's `log.jsonl`, "
        "`cooldowns.jsonl` and `judged.jsonl`.\n"
    )
    write_text_atomic(RESULTS_ROOT / "LOG.md", text + "".join(f"\n{log_table(name)}\n" for name in names))
    figure, (correct_axis, loss_axis) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name in names:
        evaluations = [entry for entry in history(name) if "eval_loss" in entry]
        steps = [entry["step"] for entry in evaluations]
        correct_axis.plot(steps, [100 * entry.get("eval_correct", 0.0) for entry in evaluations], label=name)
        loss_axis.plot(steps, [entry["eval_loss"] for entry in evaluations], label=name)
    correct_axis.set(xlabel="step", ylabel="validation correct, greedy (%)", title="validation correct")
    loss_axis.set(xlabel="step", ylabel="validation loss", yscale="log", title="validation loss")
    correct_axis.legend(fontsize=8)
    figure.tight_layout()
    temporary = RESULTS_ROOT / "curves.png.partial"
    figure.savefig(temporary, dpi=110, format="png")
    temporary.replace(RESULTS_ROOT / "curves.png")
    plt.close(figure)
    write_paper_budget_curves([name for name in names if name in PAPER_BUDGET_RUNS])


#: The runs on the paper's distributions, drawn against samples seen with the paper's budget marked.
PAPER_BUDGET_RUNS = ("prop-35", "ltl-35", "ltl-best")
#: The SIT paper's training: 50,000 steps of batch 1,024.
PAPER_SAMPLES = 50_000 * 1_024
MILESTONES = (0.90, 0.95, 0.98)


def samples_curve(name: str) -> list[tuple[int, float]]:
    """(samples seen, validation correct) at each evaluation of run ``name``."""
    batch = CAMPAIGNS[name].batch_size
    return [(e["step"] * batch, e["eval_correct"]) for e in history(name) if "eval_correct" in e]


def milestones(name: str) -> dict[str, int | None]:
    """The samples seen when run ``name``'s validation correct first reached 90%, 95% and 98% (None: not yet)."""
    curve = samples_curve(name)
    return {f"{round(100 * m)}%": next((seen for seen, correct in curve if correct >= m), None) for m in MILESTONES}


def augment_start(name: str) -> int | None:
    """The step from which campaign ``name`` trained on rewritten formulas (``--augment``): where the first call
    logged with it started (None: never)."""
    previous = 0
    for entry in log_entries(state_folder(name)):
        if "augment" in entry:
            return previous
        previous = entry["step"]
    return None


def write_paper_budget_curves(names: list[str]) -> None:
    """``curves-samples.png`` (validation correct against samples seen, the paper's budget marked) and
    ``milestones.json`` (samples seen at 90 / 95 / 98% validation correct)."""
    if not names:
        return
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5))
    for name in names:
        curve = samples_curve(name)
        (line,) = axis.plot([seen / 1e6 for seen, _ in curve], [100 * correct for _, correct in curve], label=name)
        batch = CAMPAIGNS[name].batch_size
        cooled = [e for e in log_entries(state_folder(name), COOLDOWN_LOG) if "model" in e]  # finished ones
        if cooled:
            axis.plot(
                [(e["from_step"] + e["step"]) * batch / 1e6 for e in cooled],
                [100 * e["validation"]["correct"] for e in cooled],
                marker="*",
                markersize=10,
                linestyle="none",
                color=line.get_color(),
                label=f"{name} cooled down (greedy, {cooled[-1]['validation']['count']} formulas)",
            )
        rewritten = augment_start(name)
        if rewritten is not None:
            axis.axvline(rewritten * batch / 1e6, color=line.get_color(), linestyle="-.", linewidth=0.8)
            axis.plot([], [], color=line.get_color(), linestyle="-.", label=f"{name}: formulas rewritten from here")
    axis.axvline(PAPER_SAMPLES / 1e6, color="grey", linestyle="--", label="the paper's budget (50,000 x 1,024)")
    axis.axhline(98, color="grey", linestyle=":", label="98%")
    axis.set(
        xlabel="samples seen (millions)",
        ylabel="validation correct, greedy, 256 formulas (%)",
        xscale="log",
        xlim=(0.1, PAPER_SAMPLES / 1e6 * 1.3),
        title="the paper's distributions: validation correct against samples seen",
    )
    axis.legend(fontsize=8)
    figure.tight_layout()
    temporary = RESULTS_ROOT / "curves-samples.png.partial"
    figure.savefig(temporary, dpi=110, format="png")
    temporary.replace(RESULTS_ROOT / "curves-samples.png")
    plt.close(figure)
    found = {name: milestones(name) for name in names}
    write_text_atomic(RESULTS_ROOT / "milestones.json", json.dumps(found, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", choices=sorted(CAMPAIGNS))
    parser.add_argument("--list", action="store_true", help="the campaigns and their state")
    parser.add_argument("--report", action="store_true", help="print the run's log as a table; no training")
    parser.add_argument("--results", action="store_true", help="write LOG.md and curves.png of all runs; no training")
    parser.add_argument(
        "--cool-down",
        type=int,
        metavar="STEPS",
        help="branch from the run's kept state and decay its learning rate to zero over STEPS steps (the model to "
        "ship); the campaign itself is left as it is",
    )
    parser.add_argument(
        "--augment",
        choices=["none", "commute"],
        default=None,
        help="with --cool-down: commute trains the cool-down on samples written anew at each draw (symbolinv train "
        "--augment), none on samples as written, each in a work folder of its own, to compare the two from the same "
        "step (default: as the campaign's own training writes them)",
    )
    parser.add_argument("--train-minutes", type=float, default=7.0, help="training time of this call (default 7)")
    parser.add_argument("--data-dir", type=Path, default=REPOSITORY / "runs" / "campaign-data")
    parser.add_argument("--workers", type=int, default=2, help="data-loading processes of the training")
    parser.add_argument(
        "--compile",
        nargs="?",
        const="inductor",
        default=None,
        metavar="BACKEND",
        help="train compiled (symbolinv train --compile; the graphs are built again in every call)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch's CPU threads for this call (default: OMP_NUM_THREADS where set, else 1: two runs sharing two "
        "cores, each with two threads, ran at 31-43%% of their speed)",
    )
    parser.add_argument("--build-workers", type=int, default=None, help="dataset building processes (all cores)")
    parser.add_argument("--test-samples", type=int, default=1000, help="formulas per test group of a finished run")
    args = parser.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    set_torch_threads(args.threads)  # one thread per run, unless told (the log's machine line says how many)
    quiet_off_terminal()  # as symbolinv does: no progress bars in a log
    try:
        return _main(parser, args)
    except StateDamaged as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: each campaign's state is the last one saved in {STATE_ROOT}", file=sys.stderr)
        return 130


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.list:
        damaged = 0
        for name, campaign in CAMPAIGNS.items():
            try:
                print(f"{name}: step {progress(name):,} of {campaign.steps:,}; {campaign.what}")
            except StateDamaged as error:
                print(f"error: {name}: {error}", file=sys.stderr)
                damaged += 1
        return 2 if damaged else 0
    if args.results:
        write_results()
        return 0
    if args.run is None:
        parser.error("name a run (or --list, --results)")
    if args.report:
        print(log_table(args.run))
        return 0
    if args.train_minutes <= 0:
        parser.error("--train-minutes must be positive")
    if args.augment is not None and not args.cool_down:
        parser.error("--augment goes with --cool-down (a campaign's own options are its entry in CAMPAIGNS)")
    WORK_ROOT.mkdir(parents=True, exist_ok=True)
    # One writer per campaign, and one per campaign's cool-downs (a cool-down reads the campaign's state once, at
    # its start, and writes only its own log).
    what, lock = ("a cool-down of", f"{args.run}-cooldown.lock") if args.cool_down else ("campaign", f"{args.run}.lock")
    try:
        with FileLock(WORK_ROOT / lock, timeout=0):
            if args.cool_down:
                run_cooldown(args.run, args.cool_down, args)
            else:
                run_call(args.run, args)
    except Timeout:
        print(f"error: {what} {args.run} is running in another process", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        where = (
            f"the cool-down of {args.run} continues from its last checkpoint (in {WORK_ROOT}) with the same command; "
            "the campaign's state is unchanged"
            if args.cool_down
            else f"the state of {args.run} is the last one saved in {state_folder(args.run)}"
        )
        print(f"interrupted: {where}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
