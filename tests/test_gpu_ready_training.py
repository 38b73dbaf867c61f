"""The training path made for GPUs, checked on the CPU: bf16, batches grouped by streams and length,
runs cut into time-limited chunks that resume (the shipped checkpoints: ``test_pretrained.py``)."""

from __future__ import annotations

import json
import random
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from helpers import TINY

from hf_symbolinv.commands import main
from hf_symbolinv.training import GracefulStop, SymbolInvDataCollator, grouping_key


def test_grouping_key_orders_by_streams_then_length() -> None:
    # ids 10.. are symbols here; the key counts distinct symbols, not symbol tokens.
    two_streams_long = grouping_key([5, 10, 11, 10, 6, 7, 8, 9], [0, 1, 1, 1, 0, 0, 0, 0])
    two_streams_short = grouping_key([10, 11, 10], [1, 1, 1])
    three_streams_short = grouping_key([10, 11, 12], [1, 1, 1])
    assert two_streams_short < two_streams_long < three_streams_short
    assert grouping_key([5, 6], [0, 0]) == 2


def _padding(batches: list[list[int]], shapes: list[tuple[int, int]]) -> int:
    """Padded (stream, position) cells of the batches: each batch pads to its largest sample."""
    waste = 0
    for batch in batches:
        streams = max(shapes[i][0] for i in batch)
        length = max(shapes[i][1] for i in batch)
        waste += sum(streams * length - shapes[i][0] * shapes[i][1] for i in batch)
    return waste


def test_grouped_sampler_draws_every_sample_once_and_pads_less() -> None:
    from transformers.trainer_pt_utils import LengthGroupedSampler

    rng = random.Random(0)
    shapes = [(rng.randint(1, 5), rng.randint(3, 40)) for _ in range(4096)]
    keys = [grouping_key([10 + (j % s) for j in range(n)], [1] * n) for s, n in shapes]
    batch_size = 32
    torch.manual_seed(0)
    grouped = list(LengthGroupedSampler(batch_size, lengths=keys))
    assert sorted(grouped) == list(range(len(shapes)))
    shuffled = torch.randperm(len(shapes)).tolist()

    def batches(order: list[int]) -> list[list[int]]:
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

    assert _padding(batches(grouped), shapes) < 0.5 * _padding(batches(shuffled), shapes)


def _train(prop_data: Path, output: Path, *extra: str) -> int:
    return main(
        [
            "train",
            "--task",
            "prop",
            "--preset",
            "prop-best",
            "--data",
            str(prop_data),
            "--output",
            str(output),
            "--steps",
            "4",
            "--batch-size",
            "8",
            "--eval-samples",
            "4",
            "--bf16",
            "--group-by-length",
            "--set",
            *TINY,
            *extra,
        ]
    )


@pytest.mark.slow
def test_cli_bf16_grouped_training_stops_at_the_time_limit_and_resumes(prop_data: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "run"
    # A limit shorter than one step: the run stops after its first step, with a checkpoint.
    assert _train(prop_data, output, "--time-limit", "1e-6") == 0
    printed = capsys.readouterr().out
    assert "stopped at step 1 of 4 after the time limit" in printed
    assert [c.name for c in (output / "checkpoints").iterdir()] == ["checkpoint-1"]
    assert not (output / "model").exists()  # no final model from an unfinished schedule
    # The same command without the limit continues from that checkpoint to the end of the schedule.
    assert _train(prop_data, output) == 0
    state = json.loads((output / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    assert losses and all(value == value for value in losses)  # finite, not NaN
    assert (output / "model" / "model.safetensors").is_file()


def test_sigterm_stops_at_the_end_of_the_step_with_a_save_and_a_second_one_is_not_held_back() -> None:
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        stop = GracefulStop()  # no time limit
        state = SimpleNamespace(global_step=3, max_steps=10)
        control = SimpleNamespace(should_training_stop=False, should_save=False)
        stop.on_train_begin(None, state, control)
        stop.on_step_end(None, state, control)
        assert not control.should_training_stop and stop.stopped_at is None  # nothing asked yet
        signal.raise_signal(signal.SIGTERM)
        assert received == []  # held for the end of the step, not passed on
        stop.on_step_end(None, state, control)
        assert control.should_training_stop and control.should_save
        assert (stop.stopped_at, stop.reason) == (3, "SIGTERM")
        signal.raise_signal(signal.SIGTERM)  # asked again: the handler found before training gets it at once
        assert received == [signal.SIGTERM]
        stop.on_train_end(None, state, control)
        assert signal.getsignal(signal.SIGTERM) is not stop._request
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_last_step_is_not_reported_as_stopped_early() -> None:
    stop = GracefulStop(seconds=0.0)
    state = SimpleNamespace(global_step=10, max_steps=10)
    control = SimpleNamespace(should_training_stop=False, should_save=False)
    stop.on_step_end(None, state, control)
    assert stop.stopped_at is None and not control.should_training_stop
    state.global_step = 9
    stop.on_step_end(None, state, control)
    assert stop.stopped_at == 9 and stop.reason == "the time limit (0 min)"


@pytest.mark.slow
def test_cli_training_sent_sigterm_saves_a_checkpoint_and_the_same_command_resumes(
    prop_data: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    collate = SymbolInvDataCollator.__call__
    batches: list[int] = []

    def collate_then_signal(self, features, return_tensors=None):
        batches.append(len(features))
        if len(batches) == 2:  # while the first or second step runs (the loader may fetch one batch ahead)
            signal.raise_signal(signal.SIGTERM)
        return collate(self, features, return_tensors)

    monkeypatch.setattr(SymbolInvDataCollator, "__call__", collate_then_signal)
    before = signal.getsignal(signal.SIGTERM)
    output = tmp_path / "run"
    assert _train(prop_data, output) == 0  # no time limit: the signal alone stops it
    printed = capsys.readouterr().out
    assert "after SIGTERM" in printed and "run the same command again to continue" in printed
    saved = [c.name for c in (output / "checkpoints").iterdir()]
    assert saved in (["checkpoint-1"], ["checkpoint-2"])
    assert not (output / "model").exists()
    assert signal.getsignal(signal.SIGTERM) == before  # the process's own handler is back
    monkeypatch.setattr(SymbolInvDataCollator, "__call__", collate)
    assert _train(prop_data, output) == 0
    state = json.loads((output / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    assert (output / "model" / "model.safetensors").is_file()


def test_cli_time_limit_must_be_a_positive_number(prop_data: Path, tmp_path: Path, capsys) -> None:
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(SystemExit) as exit_info:
            _train(prop_data, tmp_path / "run", "--time-limit", bad)
        assert exit_info.value.code == 2
        assert "--time-limit" in capsys.readouterr().err
