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
from filelock import FileLock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import gpu_campaign  # noqa: E402

TINY = ("--set", "d_model=16", "encoder_layers=1", "decoder_layers=1", "encoder_ffn_dim=32", "decoder_ffn_dim=32")


@pytest.fixture
def campaign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(gpu_campaign, "STATE_ROOT", tmp_path / "state")
    monkeypatch.setattr(gpu_campaign, "WORK_ROOT", tmp_path / "work")
    monkeypatch.setattr(gpu_campaign, "EVAL_SAMPLES", 4)
    tiny = gpu_campaign.Campaign(
        "ltl", "ltl-small", "ltl-small", 3, 4, "a tiny test run", num_samples=60, extra=TINY, eval_every=2
    )
    monkeypatch.setitem(gpu_campaign.CAMPAIGNS, "tiny", tiny)
    return "tiny"


def call(tmp_path: Path, minutes: float) -> int:
    return gpu_campaign.main(
        ["tiny", "--train-minutes", str(minutes), "--data-dir", str(tmp_path / "data"), "--workers", "0"]
    )


@pytest.mark.slow
def test_a_run_continues_on_a_bare_machine_from_the_state_folder_and_ends(
    campaign: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state" / campaign
    # A time limit this short stops the first call after its first step, with a checkpoint.
    assert call(tmp_path, 1e-4) == 0
    first = gpu_campaign.log_entries(state)
    assert [entry["step"] for entry in first] == [1]
    assert first[0]["optimizer_kept"] is True
    assert (state / "checkpoint" / "optimizer.pt").is_file()
    assert first[0]["validation"]["count"] == 4
    # The next window's machine is bare: only the state folder (in the repository) is there.
    shutil.rmtree(tmp_path / "work")
    assert call(tmp_path, 5) == 0
    entries = gpu_campaign.log_entries(state)
    assert [entry["step"] for entry in entries] == [1, 3]
    history = json.loads((state / "trainer_state.json").read_text())
    assert history["global_step"] == 3
    # The training resumed at step 1 (the Trainer's log has no second step 1), and the finished run keeps its log
    # and history but not its checkpoint.
    logged_steps = [entry["step"] for entry in history["log_history"] if "loss" in entry]
    assert logged_steps == sorted(set(logged_steps))
    assert not (state / "checkpoint").exists()
    assert gpu_campaign.progress(campaign) == 3
    with pytest.raises(SystemExit, match="finished"):
        call(tmp_path, 5)


@pytest.mark.slow
def test_a_state_over_the_window_limit_is_kept_without_the_optimizer_and_still_resumes(
    campaign: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state" / campaign
    assert call(tmp_path, 1e-4) == 0
    checkpoint = state / "checkpoint"
    full = sum(path.stat().st_size for path in checkpoint.iterdir())
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
    assert "--compile" not in gpu_campaign.train_arguments(run, tmp_path / "d", tmp_path / "w", 7, 2)


def test_runs_on_one_dataset_wait_for_each_others_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two campaigns started side by side on one dataset: the second waits while the first holds the data's lock."""
    from dataset_builders.errors import OutputInUseError

    attempts: list[str] = []

    def build(config: str, out_dir: Path, **options: object) -> None:
        attempts.append(config)
        if len(attempts) < 3:
            raise OutputInUseError(f"{out_dir} is being written by another build right now")

    monkeypatch.setattr(gpu_campaign.dataset_builders, "build", build)
    monkeypatch.setattr(gpu_campaign.time, "sleep", lambda seconds: None)
    gpu_campaign.build_shared_data("ltl-35", tmp_path / "data", {})
    assert attempts == ["ltl-35"] * 3
    attempts.clear()
    with pytest.raises(OutputInUseError):  # a lock held past the wait is still an error
        gpu_campaign.build_shared_data("ltl-35", tmp_path / "data", {}, wait_seconds=-1)
    assert attempts == ["ltl-35"]
