"""The GPU campaign (``benchmarks/gpu_campaign.py``) on a CPU: a run split over calls on machines that keep nothing
but the state folder continues where the last call stopped, keeps its state within the per-window size, ends, and
refuses a second writer."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from filelock import FileLock

from hf_symbolinv.utils.files import MANIFEST

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import gpu_campaign  # noqa: E402

TINY = {"d_model": 16, "encoder_layers": 1, "decoder_layers": 1, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32}


@pytest.fixture
def campaign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(gpu_campaign, "STATE_ROOT", tmp_path / "state")
    monkeypatch.setattr(gpu_campaign, "RESULTS_ROOT", tmp_path / "results")
    monkeypatch.setattr(gpu_campaign, "WORK_ROOT", tmp_path / "work")
    monkeypatch.setattr(gpu_campaign, "EVAL_SAMPLES", 4)
    tiny = gpu_campaign.Campaign(
        "ltl",
        "ltl-small",
        "ltl-small",
        3,
        4,
        "a tiny test run",
        num_samples=60,
        options={"overrides": TINY},
        eval_every=2,
    )
    monkeypatch.setitem(gpu_campaign.CAMPAIGNS, "tiny", tiny)
    return "tiny"


def call(tmp_path: Path, minutes: float, *options: str) -> int:
    return gpu_campaign.main(
        ["tiny", "--train-minutes", str(minutes), "--data-dir", str(tmp_path / "data"), "--workers", "0", *options]
    )


@pytest.mark.slow
def test_a_run_continues_on_a_bare_machine_from_the_state_folder_and_ends(
    campaign: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state" / campaign
    judged: list[list[str]] = []
    evaluate_model = gpu_campaign.evaluate_model

    def recording(model, tokenizer, task, inputs, *args, **kwargs):
        judged.append(list(inputs))
        return evaluate_model(model, tokenizer, task, inputs, *args, **kwargs)

    monkeypatch.setattr(gpu_campaign, "evaluate_model", recording)
    # A time limit this short stops the first call after its first step, with a checkpoint. It trains on one thread
    # whatever torch had (two runs on two cores, two threads each, ran at a third of the speed), and the log says so.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    torch.set_num_threads(2)
    assert call(tmp_path, 1e-4) == 0
    assert torch.get_num_threads() == 1
    first = gpu_campaign.log_entries(state)
    assert first[0]["device"].endswith(", 1 thread(s) per run")
    # Each call is judged on the first validation formulas and on as many training formulas (memorization shows as
    # a gap between the two), and LOG.md gives both.
    from datasets import load_dataset

    data = str(tmp_path / "data" / "ltl-small")
    splits = {name: list(load_dataset(data, split=name)["input"][:4]) for name in ("validation", "train")}
    assert judged == [splits["validation"], splits["train"]]
    assert first[0]["training_formulas"]["count"] == 4
    correct = first[0]["training_formulas"]["correct"]
    assert gpu_campaign.log_table(campaign).splitlines()[-1].endswith(f"% of 4 | {100 * correct:.1f}% |")
    assert [entry["step"] for entry in first] == [1]
    assert first[0]["optimizer_kept"] is True
    assert (gpu_campaign.kept_checkpoint(state) / "optimizer.pt").is_file()
    assert json.loads((state / "current.json").read_text())["checkpoint"] == "checkpoint-1"
    # The state is kept in the repository: its config names the checkpoint, not the folder the run started from.
    kept_config = json.loads((gpu_campaign.kept_checkpoint(state) / "config.json").read_text())
    assert kept_config["_name_or_path"] == "checkpoint-1"
    assert "auto_map" not in kept_config  # claims no code it lacks (the package's classes load it)
    assert first[0]["validation"]["count"] == 4
    # The next window's machine is bare: only the state folder (in the repository) is there.
    shutil.rmtree(tmp_path / "work")
    try:
        assert call(tmp_path, 5, "--threads", "2") == 0  # as many as asked
    finally:
        torch.set_num_threads(1)
    entries = gpu_campaign.log_entries(state)
    assert [entry["step"] for entry in entries] == [1, 3]
    assert entries[1]["device"].endswith(", 2 thread(s) per run")
    history = json.loads((state / "trainer_state.json").read_text())
    assert history["global_step"] == 3
    # The training resumed at step 1 (the Trainer's log has no second step 1), and the finished run keeps its log
    # and history but not its checkpoint.
    logged_steps = [entry["step"] for entry in history["log_history"] if "loss" in entry]
    assert logged_steps == sorted(set(logged_steps))
    assert sorted(path.name for path in state.iterdir()) == ["log.jsonl", "trainer_state.json"]
    assert gpu_campaign.progress(campaign) == 3
    with pytest.raises(SystemExit, match="finished"):
        call(tmp_path, 5)


@pytest.mark.slow
def test_a_campaign_that_turns_to_rewritten_formulas_logs_and_marks_where(
    campaign: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert call(tmp_path, 1e-4) == 0  # one step as written
    plain = gpu_campaign.CAMPAIGNS[campaign]
    rewritten = dataclasses.replace(plain, options={**plain.options, "augment": "commute"})
    monkeypatch.setitem(gpu_campaign.CAMPAIGNS, campaign, rewritten)
    assert call(tmp_path, 5) == 0
    assert "with --augment none -> commute" in capsys.readouterr().out  # the resume says what changed
    entries = gpu_campaign.log_entries(tmp_path / "state" / campaign)
    assert [(entry["step"], entry.get("augment")) for entry in entries] == [(1, None), (3, "commute")]
    assert gpu_campaign.augment_start(campaign) == 1
    import paper_distribution  # its card says from which step a shipped campaign trained on rewritten formulas

    assert (
        paper_distribution.augment_turn(campaign)
        == "; `--augment commute` from step 1 on, the formulas as written before it"
    )
    rows = gpu_campaign.log_table(campaign).splitlines()[-2:]
    assert ["(`--augment commute`)" in row for row in rows] == [False, True]


@pytest.mark.slow
def test_a_state_over_the_window_limit_is_kept_without_the_optimizer_and_still_resumes(
    campaign: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state" / campaign
    assert call(tmp_path, 1e-4) == 0
    checkpoint = gpu_campaign.kept_checkpoint(state)
    full = sum(path.stat().st_size for path in checkpoint.iterdir() if path.name != MANIFEST)
    weights = (checkpoint / "model.safetensors").stat().st_size
    monkeypatch.setattr(gpu_campaign, "STATE_BYTES", full - 1)
    monkeypatch.setitem(
        gpu_campaign.CAMPAIGNS, campaign, dataclasses.replace(gpu_campaign.CAMPAIGNS[campaign], steps=5)
    )
    shutil.rmtree(state)  # export the same checkpoint again, now over the limit
    written, kept = gpu_campaign.export_checkpoint(
        gpu_campaign.last_checkpoint(tmp_path / "work" / campaign / "checkpoints"), state
    )
    assert not kept and written < full - 1
    assert gpu_campaign.verify_checkpoint(checkpoint) is None  # its record lists the files it kept
    assert not (checkpoint / "optimizer.pt").exists() and not (checkpoint / "scheduler.pt").exists()
    assert (checkpoint / "model.safetensors").stat().st_size == weights
    shutil.rmtree(tmp_path / "work")
    assert call(tmp_path, 1e-4) == 0  # the Trainer starts a new optimizer from the kept weights
    assert gpu_campaign.log_entries(state)[-1]["step"] == 2


def test_a_second_writer_of_the_same_campaign_is_refused(
    campaign: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "work").mkdir()
    with FileLock(tmp_path / "work" / f"{campaign}.lock"):
        assert call(tmp_path, 1) == 2
    assert "running in another process" in capsys.readouterr().err
    assert not (tmp_path / "state").exists()


def test_a_compiled_campaign_trains_compiled_on_random_batches(tmp_path: Path) -> None:
    run = gpu_campaign.CAMPAIGNS["prop-small"]
    arguments = gpu_campaign.train_arguments(run, tmp_path / "d", tmp_path / "w", 7, 2, compile_backend="inductor")
    assert arguments[arguments.index("--compile") + 1] == "inductor"
    # Batches grouped by length would reach every (streams, length) bucket, each compiled in the window's time.
    assert "--group-by-length" not in arguments
    eager = gpu_campaign.train_arguments(run, tmp_path / "d", tmp_path / "w", 7, 2)
    assert "--compile" not in eager and "--group-by-length" in eager  # on any device: less padding


# ---------------------------------------------------------------------------------------------------
# The state folder: a kill at any moment leaves the old state or the new one; a damaged state is named
# ---------------------------------------------------------------------------------------------------
def _checkpoint(folder: Path, step: int) -> Path:
    """A checkpoint folder of the Trainer's files, small: weights, optimizer, scheduler, RNG and trainer states."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file({"weight": torch.full((4,), float(step))}, folder / "model.safetensors")
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        torch.save({"step": step, "values": torch.arange(64)}, folder / name)
    (folder / "config.json").write_text("{}")
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": [{"step": step}]}))
    return folder


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_a_new_state_replaces_the_old_one_only_once_it_is_complete(campaign: str, tmp_path: Path, monkeypatch) -> None:
    state = tmp_path / "state" / campaign
    gpu_campaign.export_checkpoint(_checkpoint(tmp_path / "work" / "checkpoint-2", 2), state)
    assert gpu_campaign.state_step(state) == 2
    newer = _checkpoint(tmp_path / "work" / "checkpoint-4", 4)
    # Killed while copying, then killed just before the switch: the old state is read both times.
    real_copy, real_write = shutil.copy2, gpu_campaign.write_text_atomic
    for where in ("copy", "switch"):

        def killed(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr(gpu_campaign.shutil, "copy2", killed if where == "copy" else real_copy)
        monkeypatch.setattr(gpu_campaign, "write_text_atomic", killed if where == "switch" else real_write)
        with pytest.raises(KeyboardInterrupt):
            gpu_campaign.export_checkpoint(newer, state)
        assert gpu_campaign.state_step(state) == 2
        assert gpu_campaign.kept_checkpoint(state) == state / "checkpoint-2"
    monkeypatch.setattr(gpu_campaign.shutil, "copy2", real_copy)
    monkeypatch.setattr(gpu_campaign, "write_text_atomic", real_write)
    gpu_campaign.export_checkpoint(newer, state)
    assert gpu_campaign.state_step(state) == 4
    # The old checkpoint and what the killed writes left are gone once the new one is in place.
    assert sorted(path.name for path in state.iterdir()) == ["checkpoint-4", "current.json"]


def test_states_of_the_old_layout_and_their_torn_writes_are_read(campaign: str, tmp_path: Path) -> None:
    state = tmp_path / "state" / campaign
    _checkpoint(state / "checkpoint", 6)
    _checkpoint(state / "checkpoint.partial", 9).joinpath("optimizer.pt").unlink()  # a copy killed half-way
    assert gpu_campaign.state_step(state) == 6
    shutil.rmtree(state)
    # Killed between the old write's two renames: the new copy (complete) and the old state moved aside.
    _checkpoint(state / "checkpoint.partial", 9)
    _checkpoint(state / "checkpoint.previous", 6)
    assert gpu_campaign.state_step(state) == 9
    # The next export writes the new layout and removes the old one's folders.
    gpu_campaign.export_checkpoint(_checkpoint(tmp_path / "work" / "checkpoint-12", 12), state)
    assert sorted(path.name for path in state.iterdir()) == ["checkpoint-12", "current.json"]


def test_a_state_behind_its_log_is_named_never_silently_resumed(
    campaign: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state" / campaign
    _checkpoint(state / "checkpoint.previous", 1)  # all a torn write left, while the log reached step 2
    (state / "log.jsonl").write_text(json.dumps({"step": 2}) + "\n")
    assert call(tmp_path, 1) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds step 1 while its log reached step 2" in err
    assert not (tmp_path / "data").exists()  # refused before any work


@pytest.mark.parametrize("layout", ["current", "old"])
@pytest.mark.parametrize("name", ["trainer_state.json", "optimizer.pt", "model.safetensors", "scheduler.pt"])
def test_a_damaged_state_is_one_line_naming_the_file_in_a_call_and_in_list(
    campaign: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str, name: str
) -> None:
    state = tmp_path / "state" / campaign
    if layout == "current":
        gpu_campaign.export_checkpoint(_checkpoint(tmp_path / "work" / "checkpoint-2", 2), state)
    else:
        _checkpoint(state / "checkpoint", 2)
    _checkpoint(state / "checkpoint.previous", 1)  # an older state that must not silently replace it
    before = {path.name for path in state.iterdir()}
    _cut(gpu_campaign.kept_checkpoint(state) / name)
    assert call(tmp_path, 1) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err and "not replaced by an older one" in err and "Traceback" not in err
    assert gpu_campaign.main(["--list"]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and f"error: {campaign}: " in captured.err and name in captured.err
    assert "ltl-best:" in captured.out  # the other campaigns are still listed
    assert {path.name for path in state.iterdir()} == before


def test_a_damaged_pointer_is_named(campaign: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state" / campaign
    gpu_campaign.export_checkpoint(_checkpoint(tmp_path / "work" / "checkpoint-2", 2), state)
    (state / "current.json").write_text('{"checkpoint": ')
    assert call(tmp_path, 1) == 2
    assert f"{state / 'current.json'} is damaged" in capsys.readouterr().err


def test_ctrl_c_is_one_line(campaign: str, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(name, args):
        raise KeyboardInterrupt

    monkeypatch.setattr(gpu_campaign, "run_call", interrupted)
    assert call(tmp_path, 1) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("interrupted: the state of tiny is the last one saved")
    # A cool-down's state is its own checkpoint, not the campaign's (which it leaves as it is).
    monkeypatch.setattr(gpu_campaign, "run_cooldown", lambda name, steps, args: interrupted(name, args))
    argv = ["tiny", "--cool-down", "40", "--data-dir", str(tmp_path / "data"), "--workers", "0"]
    assert gpu_campaign.main(argv) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the cool-down of tiny continues from its last checkpoint" in err
    assert "the campaign's state is unchanged" in err


def test_a_state_kept_where_states_were_kept_before_is_read_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_campaign, "STATE_ROOT", tmp_path / "training_state")
    monkeypatch.setattr(gpu_campaign, "RESULTS_ROOT", tmp_path / "results")
    assert gpu_campaign.state_folder("ltl-best") == tmp_path / "training_state" / "ltl-best"  # a new run
    earlier = tmp_path / "results" / "ltl-best"
    earlier.mkdir(parents=True)
    (earlier / "log.jsonl").write_text("{}\n", encoding="utf-8")
    assert gpu_campaign.state_folder("ltl-best") == earlier  # a run started before the states moved continues
    (tmp_path / "training_state" / "ltl-best").mkdir(parents=True)
    assert gpu_campaign.state_folder("ltl-best") == tmp_path / "training_state" / "ltl-best"


def test_every_campaign_trains_as_the_command_line_it_shows(tmp_path: Path) -> None:
    from hf_symbolinv.commands.cli import build_parser
    from hf_symbolinv.commands.train import train_arguments_of

    for name, run in gpu_campaign.CAMPAIGNS.items():
        shown = gpu_campaign.train_arguments(run, tmp_path / "d", tmp_path / "w", 7, 2)
        trained = gpu_campaign.train_options(run, tmp_path / "d", tmp_path / "w", 7, 2)
        assert train_arguments_of(build_parser().parse_args(shown)) == trained, name


def test_a_campaign_s_own_options_reach_its_training(tmp_path: Path) -> None:
    old = gpu_campaign.train_arguments(gpu_campaign.CAMPAIGNS["ltl-best-old-recipe"], tmp_path, tmp_path, 7, 2)
    assert old[old.index("--set") + 1] == "loss_type=adacos"
    assert old[old.index("--warmup-steps") + 1] == "100"
    deep = gpu_campaign.train_options(gpu_campaign.CAMPAIGNS["prop-small-deep"], tmp_path, tmp_path, 7, 2)
    assert deep.overrides["d_model"] == 128 and deep.overrides["encoder_layers"] == 6
    shipped = gpu_campaign.train_options(gpu_campaign.CAMPAIGNS["ltl-35"], tmp_path, tmp_path, 7, 2)
    assert (shipped.preset, shipped.lr, shipped.warmup_steps) == (None, 5e-4, 1000)
    assert shipped.init_from.endswith("hf_symbolinv/pretrained/ltl-small")
    assert shipped.augment == "commute"  # the paper's runs draw their formulas rewritten


# ---------------------------------------------------------------------------------------------------
# Cool-downs: a branch from the kept state that decays the campaign's learning rate to zero
# ---------------------------------------------------------------------------------------------------
def test_the_cool_down_starts_at_the_campaign_s_scheduled_learning_rate() -> None:
    import math

    run = gpu_campaign.CAMPAIGNS["prop-35"]
    peak, warmup = run.options["lr"], run.options["warmup_steps"]
    for step in (0, 500, 1000, 10_151, 50_000, 99_000):
        # A naive reference: a linear warm-up, then half a cosine down to zero at the run's last step.
        done = (step - warmup) / (run.steps - warmup)
        scheduled = peak * step / warmup if step < warmup else peak * 0.5 * (1 + math.cos(math.pi * done))
        assert gpu_campaign.scheduled_lr(run, step) == pytest.approx(scheduled, rel=0.05, abs=1e-9), step
    assert gpu_campaign.scheduled_lr(run, 10_151) == 4.9e-4  # two significant digits: what the card shows


def test_a_cool_down_writes_its_samples_as_its_campaign_unless_told() -> None:
    import argparse

    def augment(run: str, flag: str | None) -> str:
        return gpu_campaign.cooldown_augment(gpu_campaign.CAMPAIGNS[run], argparse.Namespace(augment=flag))

    assert augment("prop-35", None) == "commute" and augment("prop-35", "none") == "none"
    assert augment("prop-small", None) == "none" and augment("prop-small", "commute") == "commute"


@pytest.mark.slow
def test_a_cool_down_branches_from_the_kept_state_and_leaves_the_campaign_as_it_is(
    campaign: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state" / campaign
    arguments = ["tiny", "--data-dir", str(tmp_path / "data"), "--workers", "0", "--train-minutes", "5"]
    with pytest.raises(SystemExit, match="keeps no checkpoint"):  # nothing kept yet to branch from
        gpu_campaign.main([*arguments, "--cool-down", "4"])
    assert call(tmp_path, 1e-4) == 0
    log_before = (state / "log.jsonl").read_text()
    kept_before = gpu_campaign.kept_checkpoint(state)
    monkeypatch.setattr(gpu_campaign, "COOLDOWN_WARMUP", 1)
    with FileLock(tmp_path / "work" / f"{campaign}-cooldown.lock"):
        assert gpu_campaign.main([*arguments, "--cool-down", "4"]) == 2
    assert "a cool-down of tiny is running in another process" in capsys.readouterr().err
    # Stopped by its time limit after a step, it keeps its checkpoint in the campaign's state, from which the same
    # command continues it on a machine without its work folder; once ended, the state keeps its model, not its
    # checkpoint, so that any machine judges and ships it.
    assert gpu_campaign.main([*arguments, "--cool-down", "4", "--train-minutes", "1e-4"]) == 0
    branch = state / "cooldown-1-of-4"
    assert gpu_campaign.state_step(branch) == 1 and gpu_campaign.kept_checkpoint(branch).name == "checkpoint-1"
    work = tmp_path / "work" / f"{campaign}-cooldown-1-of-4"
    shutil.rmtree(work)
    capsys.readouterr()
    assert gpu_campaign.main([*arguments, "--cool-down", "4"]) == 0
    out = capsys.readouterr().out
    assert f"the cool-down resumes from its step 1 (the state kept in {branch})" in out
    assert f"{campaign}: the cool-down finished; the model is in {branch / 'model'}\n" in out
    assert list(state.glob("cooldown-*")) == [branch] and [path.name for path in branch.iterdir()] == ["model"]
    assert gpu_campaign.kept_checkpoint(branch) is None and gpu_campaign.state_step(branch) == 0
    stopped, entry = gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG)
    assert stopped["step"] == 1 and "model" not in stopped and stopped["state_bytes"] > 0
    assert Path(entry["model"]) == branch / "model" and gpu_campaign.verify_checkpoint(branch / "model") is None
    kept_files = [path for path in (branch / "model").iterdir() if path.name != MANIFEST]
    assert entry["state_bytes"] == sum(path.stat().st_size for path in kept_files) > 0
    assert not any(path.suffix == ".py" or path.name.startswith("optimizer") for path in kept_files)
    kept_config = json.loads((branch / "model" / "config.json").read_text())
    assert "auto_map" not in kept_config  # claims no code it lacks
    # Nor a folder of the machine that trained it: the saved model's card (a release writes its own) is not kept.
    assert kept_config["_name_or_path"] == "model" and (work / "model" / "README.md").is_file()
    assert "README.md" not in {path.name for path in kept_files}
    assert (entry["from_step"], entry["step"], entry["of"]) == (1, 4, 4)
    assert entry["lr"] == gpu_campaign.scheduled_lr(gpu_campaign.CAMPAIGNS[campaign], 1) > 0
    assert entry["validation"]["count"] == 4
    assert gpu_campaign.finished_cooldown(campaign) == entry
    # Called again, an ended cool-down says where its model is; it trains no step past its end and logs nothing.
    model = Path(entry["model"])
    model_bytes = (model / "model.safetensors").read_bytes()
    assert (work / "model" / "model.safetensors").read_bytes() == model_bytes  # the copy is the trained model
    assert gpu_campaign.main([*arguments, "--cool-down", "4"]) == 0
    assert f"the cool-down from step 1 had ended; the model is in {model}\n" in capsys.readouterr().out
    assert gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG) == [stopped, entry]
    assert (model / "model.safetensors").read_bytes() == model_bytes
    assert gpu_campaign.last_checkpoint(work / "checkpoints").name == "checkpoint-4"
    # On a machine without its work folder, the state's copy is the model; without that copy too, its log line says
    # it ended: it refuses rather than run it a second time.
    moved, set_aside = tmp_path / "elsewhere", tmp_path / "model-set-aside"
    work.rename(moved)
    assert gpu_campaign.main([*arguments, "--cool-down", "4"]) == 0
    assert f"had ended; the model is in {model}\n" in capsys.readouterr().out
    assert gpu_campaign.finished_cooldown(campaign) == entry
    model.rename(set_aside)
    assert gpu_campaign.finished_cooldown(campaign) is None
    with pytest.raises(SystemExit, match=r"cool-down of tiny from step 1 over 4 steps ended on .* is not here"):
        gpu_campaign.main([*arguments, "--cool-down", "4"])
    assert not work.exists() and not model.exists()
    assert gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG) == [stopped, entry]
    set_aside.rename(model)
    moved.rename(work)
    # A cool-down of another length from the same step is a schedule of its own: its own folder, from its step 0.
    # Its state replaces the ended one's (one per campaign); the model stays in the work folder where it ended.
    assert gpu_campaign.main([*arguments, "--cool-down", "3"]) == 0
    shorter = gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG)[-1]
    assert (shorter["from_step"], shorter["step"], shorter["of"]) == (1, 3, 3)
    assert Path(shorter["model"]) == state / "cooldown-1-of-3" / "model"
    assert list(state.glob("cooldown-*")) == [state / "cooldown-1-of-3"]
    assert (work / "model" / "model.safetensors").read_bytes() == model_bytes
    assert gpu_campaign.finished_cooldown(campaign) == shorter
    # The learning rate went from the campaign's down to zero; the campaign's state and log are as they were.
    history = json.loads((work / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())
    rates = [row["learning_rate"] for row in history["log_history"] if "learning_rate" in row]
    assert max(rates) <= entry["lr"] and rates[-1] < entry["lr"] / 2
    assert (state / "log.jsonl").read_text() == log_before
    assert gpu_campaign.kept_checkpoint(state) == kept_before
    assert gpu_campaign.progress(campaign) == 1
    # The results list it under the campaign and mark it on the curve against samples seen.
    monkeypatch.setattr(gpu_campaign, "PAPER_BUDGET_RUNS", (campaign,))
    assert gpu_campaign.main(["--results"]) == 0
    log = (tmp_path / "results" / "LOG.md").read_text()
    assert f"Cool-downs of `{campaign}`" in log and f"| 1 | {entry['lr']:g} | 4 of 4 |" in log
    assert (tmp_path / "results" / "curves-samples.png").stat().st_size > 1000
    # Released as a package model from the state's copy: its card says how it was cooled down, its weights are the
    # cool-down's.
    import paper_distribution
    import torch
    from safetensors.torch import load_file

    monkeypatch.setattr(paper_distribution, "PRETRAINED_DIR", tmp_path / "pretrained")
    measured = {"correct": 0.5, "exact": 0.1, "invalid": 0.0, "count": 4, "alpha_covariance": {"5": 1.0}}
    row = {"parameters": 1000, "test": measured, "test_by_size": {}, "test_10sym": measured}
    model = Path(shorter["model"])
    folder = paper_distribution.ship(
        campaign, "tiny-cooled", row, model, shorter, paper_distribution.load_for_evaluation(model)
    )
    card = " ".join((folder / "README.md").read_text().split())
    assert f"`python benchmarks/gpu_campaign.py {campaign} --cool-down 3`" in card
    assert f"({shorter['lr']:g}) decayed to zero over 3 more steps" in card and "This model: step 1 (" in card
    shipped, trained = load_file(folder / "model.safetensors"), load_file(model / "model.safetensors")
    assert shipped.keys() == trained.keys()
    for key, weight in trained.items():
        assert shipped[key].dtype == torch.float16
        torch.testing.assert_close(shipped[key].float(), weight.float(), atol=1e-3, rtol=1e-3)
    # The same branch on samples written anew at each draw (--augment commute): a folder and a log line of its own,
    # marked in LOG.md and named in the card's command; without --cool-down the option is refused.
    with pytest.raises(SystemExit):
        gpu_campaign.main([*arguments, "--augment", "commute"])
    assert "--augment goes with --cool-down" in capsys.readouterr().err
    assert gpu_campaign.main([*arguments, "--cool-down", "4", "--augment", "commute"]) == 0
    _, plain, _, augmented = gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG)
    assert plain == entry and augmented["augment"] == "commute" and augmented["from_step"] == 1
    assert Path(augmented["model"]) == state / "cooldown-1-of-4-commute" / "model"
    augmented_work = tmp_path / "work" / f"{campaign}-cooldown-1-of-4-commute"
    options = json.loads((augmented_work / "checkpoints" / "checkpoint-4" / MANIFEST).read_text())
    assert options["options"]["augment"] == "commute"
    assert gpu_campaign.main(["--results"]) == 0
    assert "| 1 (`--augment commute`) |" in (tmp_path / "results" / "LOG.md").read_text()
    commuted = Path(augmented["model"])
    folder = paper_distribution.ship(
        campaign, "tiny-commuted", row, commuted, augmented, paper_distribution.load_for_evaluation(commuted)
    )
    card = " ".join((folder / "README.md").read_text().split())
    assert f"`python benchmarks/gpu_campaign.py {campaign} --cool-down 4 --augment commute`" in card
    # A kept model whose files disagree with their record is named, not shipped.
    config = Path(augmented["model"]) / "config.json"
    config.write_text(config.read_text().replace('"d_model"', '"d_model" ', 1))
    with pytest.raises(SystemExit, match=r"the cool-down's model .*commute/model is damaged: .*; it is not shipped"):
        paper_distribution.main(["--ship", campaign, "--cooled", "--name", "tiny-damaged"])
    assert not (tmp_path / "pretrained" / "tiny-damaged").exists()


@pytest.mark.slow
def test_a_cool_down_stopped_before_its_end_continues_after_its_campaign_moved_on(
    campaign: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A window runs a campaign and its cool-down side by side: both stop at its end, the campaign a step further on.
    # The same command continues the cool-down from its own step, on any machine, instead of branching anew from the
    # campaign's new step and discarding it.
    state = tmp_path / "state" / campaign
    arguments = ["tiny", "--data-dir", str(tmp_path / "data"), "--workers", "0"]
    monkeypatch.setattr(gpu_campaign, "COOLDOWN_WARMUP", 1)
    assert call(tmp_path, 1e-4) == 0
    assert gpu_campaign.main([*arguments, "--cool-down", "4", "--train-minutes", "1e-4"]) == 0
    branch = state / "cooldown-1-of-4"
    assert gpu_campaign.state_step(branch) == 1
    assert call(tmp_path, 1e-4) == 0
    assert gpu_campaign.state_step(state) == 2
    shutil.rmtree(tmp_path / "work" / f"{campaign}-cooldown-1-of-4")  # continued where it did not train
    capsys.readouterr()
    # This call is stopped as it writes its log line, after keeping the ended model.
    append_line = gpu_campaign.append_line

    def stopped_at_the_end(log: Path, entry: dict) -> str:
        if "model" in entry:
            raise KeyboardInterrupt
        return append_line(log, entry)

    monkeypatch.setattr(gpu_campaign, "append_line", stopped_at_the_end)
    assert gpu_campaign.main([*arguments, "--cool-down", "4", "--train-minutes", "5"]) == 130
    monkeypatch.setattr(gpu_campaign, "append_line", append_line)
    out = capsys.readouterr().out
    assert "tiny: the cool-down from step 1 stopped before its end; it continues (the campaign is at step 2:" in out
    assert f"the cool-down resumes from its step 1 (the state kept in {branch})" in out
    assert len(gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG)) == 1
    assert gpu_campaign.kept_checkpoint(branch) is None and (branch / "model" / "model.safetensors").is_file()
    # Ended, it is no longer under way: the next cool-down writes the missing line, then branches from the campaign's
    # step.
    assert gpu_campaign.main([*arguments, "--cool-down", "4", "--train-minutes", "1e-4"]) == 0
    out = capsys.readouterr().out
    assert "the cool-down from step 1 over 4 steps ended on" in out and "without its log line" in out
    stopped, ended, branched = gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG)
    assert (stopped["from_step"], stopped["step"]) == (1, 1) and "model" not in stopped
    assert (ended["from_step"], ended["step"], ended["of"]) == (1, 4, 4) and Path(ended["model"]) == branch / "model"
    assert ended["call_minutes"] > 0 and ended["state_bytes"] > 0
    assert branched["from_step"] == 2
    assert list(state.glob("cooldown-*")) == [state / "cooldown-2-of-4"]
    # The campaign finishes meanwhile and keeps no checkpoint: the unfinished branch still continues, and says so.
    assert call(tmp_path, 5) == 0 and gpu_campaign.kept_checkpoint(state) is None
    capsys.readouterr()
    assert gpu_campaign.main([*arguments, "--cool-down", "4", "--train-minutes", "5"]) == 0
    out = capsys.readouterr().out
    assert "the cool-down from step 2 stopped before its end; it continues (the campaign has finished and" in out
    assert gpu_campaign.log_entries(state, gpu_campaign.COOLDOWN_LOG)[-1]["step"] == 4


def choice_table_with(hits: int) -> dict:
    """A choice table of 10 validation formulas in two cells, ``hits`` of them answered."""
    return {
        "task": "ltl",
        "correct": hits / 10,
        "cells": {"2": {"5": [min(hits, 4), 4]}, "3": {"9": [max(hits - 4, 0), 6]}},
    }


def test_a_release_must_beat_the_shipped_choice_table_before_the_test_split_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import paper_distribution

    from hf_symbolinv import pretrained

    shipped = tmp_path / "pretrained" / "ltl-x" / pretrained.CHOICE_TABLE
    shipped.parent.mkdir(parents=True)
    shipped.write_text(json.dumps(choice_table_with(7)))
    monkeypatch.setattr(paper_distribution, "PRETRAINED_DIR", tmp_path / "pretrained")
    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", tmp_path / "pretrained")
    refuse = paper_distribution.refusal_to_replace
    assert refuse(choice_table_with(8), "ltl-x") is None
    assert refuse(choice_table_with(7), "ltl-x") == (
        "its choice table reads 7 of 10 validation formulas (70.0%) against the shipped ltl-x's 7 (70.0%)"
    )  # a tie keeps the shipped model
    assert "reads 3 of 10" in refuse(choice_table_with(3), "ltl-x")
    assert refuse(choice_table_with(3), "not-shipped-yet") is None
    larger = choice_table_with(9)
    larger["cells"]["4"] = {"12": [5, 5]}
    assert "not comparable" in refuse(larger, "ltl-x") and "the same --limit" in refuse(larger, "ltl-x")
    # The candidate is judged on its weights as they would ship: rounded to float16, computed in float32.
    layer = torch.nn.Linear(3, 3)
    with torch.no_grad():
        layer.weight.fill_(1 + 2**-13)  # between two float16 numbers
    expected = layer.weight.detach().half().float()
    rounded = paper_distribution.round_to_float16(layer)
    assert rounded.weight.dtype == torch.float32 and torch.equal(rounded.weight, expected)
    assert not torch.equal(expected, torch.full((3, 3), 1 + 2**-13))
    # Through the command: a tie stops the release in one line before the test split is read; nothing is written.
    monkeypatch.setattr(gpu_campaign, "state_folder", lambda name: tmp_path / "state")
    monkeypatch.setattr(gpu_campaign, "kept_checkpoint", lambda state: tmp_path / "checkpoint-4200")
    monkeypatch.setattr(paper_distribution, "load_for_evaluation", lambda folder: (torch.nn.Linear(2, 2), None))
    monkeypatch.setattr(paper_distribution, "choice_table", lambda model, tokenizer, task, args: choice_table_with(7))

    def test_split_measured(*args: object, **kwargs: object) -> None:
        raise AssertionError("the test split was measured for a model that does not ship")

    monkeypatch.setattr(paper_distribution, "measure", test_split_measured)
    monkeypatch.setattr(paper_distribution, "ship", test_split_measured)
    assert paper_distribution.main(["--ship", "ltl-35", "--name", "ltl-x"]) == 1
    out = capsys.readouterr().out
    assert "ltl-35: not shipped as ltl-x: its choice table reads 7 of 10" in out and "was not measured" in out
    assert json.loads(shipped.read_text()) == choice_table_with(7)
    # The verdict is logged with the state it judged, both tables' hits, and no test figures: none were read.
    [refused] = gpu_campaign.log_entries(tmp_path / "state", gpu_campaign.JUDGED_LOG)
    assert {key: refused[key] for key in ("name", "step", "choice", "shipped_choice", "shipped")} == {
        "name": "ltl-x",
        "step": 4200,
        "choice": [7, 10],
        "shipped_choice": [7, 10],
        "shipped": False,
    }
    assert "test" not in refused and "test_10sym" not in refused
    # A better candidate: its test split is measured on the very model it was judged on (rounded, loaded once).
    loads: list[torch.nn.Module] = []

    def load_once(folder: Path) -> tuple[torch.nn.Module, None]:
        loads.append(torch.nn.Linear(2, 2))
        with torch.no_grad():
            loads[-1].weight.fill_(1 + 2**-13)
        return loads[-1], None

    measured_models: list[object] = []

    def measure(folder: Path, task: str, args: object, loaded: tuple[object, object] | None = None) -> dict:
        measured_models.append(None if loaded is None else loaded[0])
        figures = {"correct": 0.9, "count": 10}
        return {"model": str(folder), "task": task, "test": figures, "test_10sym": {**figures, "correct": 0.8}}

    monkeypatch.setattr(paper_distribution, "load_for_evaluation", load_once)
    monkeypatch.setattr(paper_distribution, "choice_table", lambda model, tokenizer, task, args: choice_table_with(8))
    monkeypatch.setattr(paper_distribution, "measure", measure)
    shipped_models: list[object] = []

    def ship(campaign: str, name: str, row: dict, source: Path, cooldown: object, loaded: tuple) -> Path:
        shipped_models.append(loaded[0])
        return shipped.parent

    monkeypatch.setattr(paper_distribution, "ship", ship)
    saved: list[list[dict]] = []
    monkeypatch.setattr(paper_distribution, "save_rows", saved.append)
    assert paper_distribution.main(["--ship", "ltl-35", "--name", "ltl-x"]) == 0
    assert len(loads) == 1 and measured_models == [loads[0]] and shipped_models == [loads[0]]
    assert torch.equal(loads[0].weight, torch.full((2, 2), 1 + 2**-13).half().float())  # rounded before the test
    assert saved[0][0]["validation_correct"] == 0.8 and json.loads(shipped.read_text()) == choice_table_with(8)
    # Against the table it replaced, with the test figures it shipped with; the campaign's log shows both verdicts.
    released = gpu_campaign.log_entries(tmp_path / "state", gpu_campaign.JUDGED_LOG)[1]
    assert (released["choice"], released["shipped_choice"], released["shipped"]) == ([8, 10], [7, 10], True)
    assert (released["test"], released["test_10sym"]) == (0.9, 0.8)
    table = gpu_campaign.log_table("ltl-35").splitlines()
    assert table[-2].endswith("| 4,200 | 70.0% (7 of 10) | 70.0% | not shipped (level) | - | - |")
    assert table[-1].endswith("| 4,200 | 80.0% (8 of 10) | 70.0% | **shipped** as `ltl-x` | 90.0% | 80.0% |")


def test_small_formula_figures_join_a_measured_models_row_and_its_table_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import paper_distribution

    monkeypatch.setattr(paper_distribution, "RESULTS", tmp_path / "results")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"vocabulary": "prop"}))
    asked = []

    def groups(model_dir: Path, task: str, tests: dict, beam: int) -> dict:
        asked.append((model_dir, task, beam))
        return {"1-3 symbols": {"correct": 0.95, "count": 1000}, "4-8 symbols": {"correct": 0.977, "count": 1000}}

    monkeypatch.setattr(paper_distribution, "evaluate_groups", groups)
    monkeypatch.setattr(paper_distribution, "small_tests", lambda data_dir, task, limit: {})
    with pytest.raises(SystemExit, match="measure it on the paper's distribution first"):
        paper_distribution.main(["--small-formulas", "--models", str(folder)])
    measured = {"correct": 0.9, "exact": 0.1, "invalid": 0.0, "count": 4, "alpha_covariance": {"5": 1.0}}
    row = {"model": str(folder), "task": "prop", "parameters": 1000, "test": measured, "test_by_size": {}}
    paper_distribution.save_rows([{**row, "test_10sym": measured, "date": "2026-11-27", "machine": "m"}])
    assert "|  | 98.03 |" in (tmp_path / "results" / "RESULTS.md").read_text()  # no small-formula figures yet
    assert paper_distribution.main(["--small-formulas", "--models", str(folder)]) == 0
    assert asked == [(folder, "prop", 3)]
    [saved] = json.loads((tmp_path / "results" / "results.json").read_text())["models"]
    assert saved["small_formulas"]["1-3 symbols"] == 0.95 and saved["test"] == measured  # the rest kept
    assert "| 95.0 / 97.7 | 98.03 |" in (tmp_path / "results" / "RESULTS.md").read_text()


def test_the_results_table_and_file_list_propositional_models_first_each_task_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import paper_distribution

    monkeypatch.setattr(paper_distribution, "RESULTS", tmp_path / "results")
    measured = {"correct": 0.9, "exact": 0.1, "invalid": 0.0, "count": 4, "alpha_covariance": {"5": 1.0}}
    for model, task in [("ltl-b", "ltl"), ("prop-b", "prop"), ("ltl-a", "ltl"), ("prop-a", "prop")]:
        row = {"model": model, "task": task, "parameters": 1000, "test": measured, "test_by_size": {}}
        paper_distribution.save_rows([{**row, "test_10sym": measured, "date": "2026-12-03", "machine": "m"}])
    table = (tmp_path / "results" / "RESULTS.md").read_text()
    assert [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")] == [
        "prop-a",
        "prop-b",
        "ltl-a",
        "ltl-b",
    ]
    saved = json.loads((tmp_path / "results" / "results.json").read_text())["models"]
    assert [row["model"] for row in saved] == ["prop-a", "prop-b", "ltl-a", "ltl-b"]  # the file in the same order
    row = {"model": "ltl-a", "task": "ltl", "parameters": 2000, "test": measured, "test_by_size": {}}
    paper_distribution.save_rows([{**row, "test_10sym": measured, "date": "2026-12-06", "machine": "m"}])
    saved = json.loads((tmp_path / "results" / "results.json").read_text())["models"]
    assert [(row["model"], row["parameters"]) for row in saved] == [  # a remeasured model keeps its place
        ("prop-a", 1000),
        ("prop-b", 1000),
        ("ltl-a", 2000),
        ("ltl-b", 1000),
    ]


def test_a_loss_a_call_did_not_reach_is_a_dash_in_the_log_table() -> None:
    entry = {
        "date": "2026-12-05T04:45:20+00:00",
        "device": "x86_64 AMD EPYC, 2 cores",
        "step": 420,
        "of": 2000,
        "samples_per_second": 130.6,
        "train_loss": 0.0486,
        "validation": {"count": 500, "correct": 0.958},
        "training_formulas": {"count": 500, "correct": 0.968},
    }
    cells = gpu_campaign.log_row(entry).strip("| ").split(" | ")
    assert cells[-4:] == ["0.049", "-", "95.8% of 500", "96.8%"]
    assert "nan" not in cells
    assert gpu_campaign.log_row({**entry, "eval_loss": 0.04585}).strip("| ").split(" | ")[-3] == "0.046"


def test_the_judged_table_names_a_cool_down_s_branch_and_marks_rows_entered_from_history() -> None:
    cooled = {
        "date": "2026-11-28T10:00:00+00:00",
        "name": "prop-35",
        "from_step": 12371,
        "of": 1500,
        "augment": "commute",
        "choice": [944, 1000],
        "shipped_choice": [941, 1000],
        "shipped": True,
        "test": 0.942,
        "from_history": True,
    }
    first = {**cooled, "choice": [900, 1000], "shipped_choice": None, "shipped": True}
    intro, _, _, _, *rows = gpu_campaign.judged_table("prop-35", [cooled, first])
    assert "Rows marked * were entered from the release history" in intro
    assert rows[0] == (
        "| 2026-11-28T10:00 * | cooled down from 12,371 (`--augment commute`) over 1,500 steps | 94.4% (944 of 1,000) "
        "| 94.1% | **shipped** as `prop-35` | 94.2% | - |"
    )
    assert "| 90.0% (900 of 1,000) | none shipped | **shipped** as `prop-35` |" in rows[1]
    [intro, *_] = gpu_campaign.judged_table("prop-35", [{**cooled, "from_history": False}])
    assert "release history" not in intro


def test_threads_below_one_are_refused(campaign: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        gpu_campaign.main([campaign, "--threads", "0"])
    assert stop.value.code == 2
    assert "--threads must be at least 1" in capsys.readouterr().err
