"""Data safety of the dataset builders: nothing lost, nothing silently wrong.

A finished dataset is never replaced by one of other parameters without ``overwrite``; two builds
never write one folder together (a killed one never blocks the next); tiny builds succeed or fail
clearly; a failure leaves nothing behind but the resumable state of an interrupted generation; bad
input files and output paths are one-line ``ValueError``s naming the path.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import datasets
import pytest

import dataset_builders
from dataset_builders import copy_task, output
from dataset_builders.errors import (
    DatasetBuildError,
    DeepLTLFilesNotFoundError,
    EmptyDatasetError,
    OutputDirError,
    OutputInUseError,
    ParametersChangedError,
)
from dataset_builders.logic_tasks import build_logic
from dataset_builders.ltl_random35 import _ABOUT, CONFIGS, LTL_TASK
from dataset_builders.output import INFO_FILE, LOCK_FILE, PARTIAL_DIR
from dataset_builders.params import BuildOptions
from hf_symbolinv.commands import main

REPO = Path(__file__).resolve().parents[1]
COPY = {"num_samples": 50, "progress": False}  # a copy-task build: well under a second


def _copy(out: Path | None, **options) -> datasets.DatasetDict:
    return dataset_builders.build("copy-small", out, BuildOptions(**{**COPY, **options}))


def _lists(dataset: datasets.DatasetDict) -> dict[str, list[dict]]:
    return {name: split.to_list() for name, split in dataset.items()}


def _tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` with its content (what a failure must leave unchanged)."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _one_line(error: pytest.ExceptionInfo, *parts: object) -> None:
    message = str(error.value)
    assert "\n" not in message
    for part in parts:
        assert str(part) in message, message


class Interrupted(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------------------
# Rebuilding with other parameters
# ---------------------------------------------------------------------------------------------------
def test_a_finished_dataset_is_replaced_only_with_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "copy"
    seed0 = _lists(_copy(out))
    before = _tree(out)

    with pytest.raises(ParametersChangedError) as caught:
        _copy(out, seed=7)
    _one_line(caught, out, "finished dataset", "seed 0 -> 7", "--overwrite")
    with pytest.raises(ParametersChangedError) as caught:
        _copy(out, num_samples=40)
    _one_line(caught, "num_samples 50 -> 40")
    assert _tree(out) == before  # nothing touched

    calls: list[int] = []
    assert _lists(_copy(out, on_accept=calls.append)) == seed0 and calls == []  # same parameters: a no-op

    replaced = _copy(out, seed=7, overwrite=True)
    assert _lists(replaced) == _lists(_copy(None, seed=7)) != seed0
    assert _lists(datasets.load_dataset(str(out))) == _lists(replaced)
    assert json.loads((out / INFO_FILE).read_text())["seed"] == 7
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "build_info.json", "data"]


def test_overwrite_never_removes_files_the_builder_does_not_own(tmp_path: Path) -> None:
    out = tmp_path / "copy"
    _copy(out)
    (out / "data" / "notes.txt").write_text("mine")
    (out / "data" / "train-00000-of-00001.parquet.bak").write_text("mine too")
    before = _tree(out)
    with pytest.raises(OutputDirError, match="not empty") as caught:
        _copy(out, seed=7, overwrite=True)
    _one_line(caught, out, "data/notes.txt")
    assert _tree(out) == before
    # A user's file beside a dataset (not inside its data folder) stays, and --overwrite rebuilds around it.
    (out / "data" / "notes.txt").unlink()
    (out / "data" / "train-00000-of-00001.parquet.bak").unlink()
    (out / "notes.txt").write_text("mine")
    rebuilt = _copy(out, seed=7, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"
    assert _lists(rebuilt) == _lists(datasets.load_dataset(str(out)))
    # A user's README alone is not a built dataset either.
    own = tmp_path / "own"
    own.mkdir()
    (own / "README.md").write_text("my notes")
    with pytest.raises(OutputDirError, match="README.md"):
        _copy(own, overwrite=True)
    assert (own / "README.md").read_text() == "my notes"


def test_an_interrupted_build_of_other_parameters_is_named_and_discarded_only_with_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "copy"

    def stop(accepted: int) -> None:
        if accepted >= 25:
            raise Interrupted

    with pytest.raises(Interrupted):
        _copy(out, chunk_size=10, on_accept=stop)
    with pytest.raises(ParametersChangedError) as caught:
        _copy(out, seed=7)
    _one_line(caught, out, "interrupted build", "seed 0 -> 7")
    assert (out / PARTIAL_DIR / "copy-small" / "state.json").exists()  # still resumable
    assert _lists(_copy(out, seed=7, overwrite=True)) == _lists(_copy(None, seed=7))
    assert not (out / PARTIAL_DIR).exists()


# ---------------------------------------------------------------------------------------------------
# Build options: one object, checked
# ---------------------------------------------------------------------------------------------------
def test_build_options_refuse_unknown_fields_other_types_and_other_families_options(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="num_sample"):
        BuildOptions(num_sample=10)  # a typo is an error, not an ignored keyword
    with pytest.raises(TypeError, match="build options must be a BuildOptions, got dict"):
        dataset_builders.build("copy-small", tmp_path / "dict", {"num_samples": 10})  # type: ignore[arg-type]
    refused = [
        ("prop-35", BuildOptions(timeout=5.0), "timeout applies to the LTL configurations only, not prop-35"),
        ("copy-small", BuildOptions(timeout=5.0), "timeout applies to the LTL configurations only, not copy-small"),
        ("car-cdr-seq", BuildOptions(timeout=5.0), "timeout applies to the LTL configurations only, not car-cdr-seq"),
        ("ltl-35", BuildOptions(max_depth=6), "max_depth applies to the tree configurations only, not ltl-35"),
        ("kinship", BuildOptions(max_depth=6), "max_depth applies to the tree configurations only, not kinship"),
    ]
    for name, options, message in refused:
        out = tmp_path / "new" / name
        with pytest.raises(ValueError) as caught:
            dataset_builders.build(name, out, options)
        _one_line(caught, message)
    assert not (tmp_path / "new").exists() and not (tmp_path / "dict").exists()  # refused before any folder


#: Fingerprints of builds made before build options became one object: such a build is still recognised.
PINNED_FINGERPRINTS = {
    "copy-small": (BuildOptions(num_samples=50), "f7941b431d81982b"),
    "ltl-35": (BuildOptions(num_samples=5, num_symbols=0, workers=1), "9f08285ce6021aeb"),
    "prop-35": (BuildOptions(num_samples=5, num_symbols=1, workers=1), "87236cb4f262bfd6"),
    "car-cdr-seq": (BuildOptions(num_samples=40, max_size=3, max_depth=6), "6d14c8e720f9b50f"),
}


@pytest.mark.parametrize("name", sorted(PINNED_FINGERPRINTS))
def test_a_build_keeps_the_fingerprint_it_had_before(tmp_path: Path, name: str) -> None:
    options, fingerprint = PINNED_FINGERPRINTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny builds leave splits empty
        dataset_builders.build(name, tmp_path / name, dataclasses.replace(options, progress=False))
    assert json.loads((tmp_path / name / INFO_FILE).read_text())["fingerprint"] == fingerprint


# ---------------------------------------------------------------------------------------------------
# One writer per folder
# ---------------------------------------------------------------------------------------------------
_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import dataset_builders
    from dataset_builders import copy_task

    out, seed, point, ready, go = sys.argv[1:]

    def wait():
        Path(ready).touch()
        while not Path(go).exists():
            time.sleep(0.02)

    hook = None
    if point == "generate":  # after two committed chunks
        def hook(accepted):
            if accepted == 25:
                wait()
    else:  # while writing the dataset: the split files are in a staging folder
        original = copy_task._card
        def card(*args):
            wait()
            return original(*args)
        copy_task._card = card
    dataset_builders.build(
        "copy-small",
        out,
        dataset_builders.BuildOptions(num_samples=50, seed=int(seed), progress=False, chunk_size=10, on_accept=hook),
    )
    """
)


def _start_holder(tmp_path: Path, out: Path, seed: int, point: str) -> tuple[subprocess.Popen, Path]:
    """A build in another process, paused at ``point`` (holding the folder's lock) until ``go`` exists."""
    ready, go = tmp_path / f"ready-{point}", tmp_path / f"go-{point}"
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(out), str(seed), point, str(ready), str(go)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if process.poll() is not None:
            pytest.fail(f"the holder exited early: {process.stderr.read() if process.stderr else ''}")
        assert time.monotonic() < deadline, "the holder did not start"
        time.sleep(0.02)
    return process, go


def test_a_second_writer_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "copy"
    holder, go = _start_holder(tmp_path, out, 0, "generate")
    try:
        started = time.monotonic()
        with pytest.raises(OutputInUseError) as caught:
            _copy(out, seed=7)
        assert time.monotonic() - started < 5  # refused, not waiting
        _one_line(caught, out, "another build")
        with pytest.raises(OutputInUseError):
            _copy(out)  # the same parameters too: one writer at a time
        assert main(["data", "build", "copy-small", "--out", str(out), "--num-samples", "50", "--quiet"]) == 2
        assert f"{out} is being written by another build" in capsys.readouterr().err
    finally:
        go.touch()
        _, errors = holder.communicate(timeout=60)
    assert holder.returncode == 0, errors
    assert _lists(datasets.load_dataset(str(out))) == _lists(_copy(None))  # seed 0 only, nothing mixed
    assert not (out / LOCK_FILE).exists()


def test_a_build_told_to_wait_finds_the_dataset_another_process_was_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs that share a dataset (a training call and an evaluation started side by side) wait for each other."""
    monkeypatch.setattr(dataset_builders, "WAIT_POLL_SECONDS", 0.05)
    out = tmp_path / "copy"
    holder, go = _start_holder(tmp_path, out, 0, "generate")
    try:
        with pytest.raises(OutputInUseError):  # a wait that ends while the other still writes ends in the refusal
            dataset_builders.build("copy-small", out, BuildOptions(**COPY), wait_seconds=0.3)
        releases = threading.Timer(1.0, go.touch)
        releases.start()
        started = time.monotonic()
        built = dataset_builders.build("copy-small", out, BuildOptions(**COPY), wait_seconds=120)
        assert time.monotonic() - started >= 0.9  # it waited for the holder, then found its dataset finished
    finally:
        go.touch()
        _, errors = holder.communicate(timeout=60)
    assert holder.returncode == 0, errors
    assert _lists(built) == _lists(_copy(None))


@pytest.mark.slow
def test_two_builds_started_together_never_mix(tmp_path: Path) -> None:
    out = tmp_path / "copy"
    code = "import sys; from hf_symbolinv.commands import main; sys.exit(main(sys.argv[1:]))"
    builds = [
        subprocess.Popen(
            [sys.executable, "-c", code, "data", "build", "copy-small", "--out", str(out)]
            + ["--num-samples", "2000", "--seed", str(seed), "--quiet"],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (0, 7)
    ]
    results = [(build.wait(timeout=120), build.stderr.read() if build.stderr else "") for build in builds]
    assert sorted(code for code, _ in results) == [0, 2], results
    winner = [0, 7][[code for code, _ in results].index(0)]
    loser_error = next(error for code, error in results if code == 2)
    assert str(out) in loser_error and len(loser_error.strip().splitlines()) == 1, loser_error
    built = _lists(datasets.load_dataset(str(out)))
    assert built == _lists(_copy(None, num_samples=2000, seed=winner))


@pytest.mark.parametrize("point", ["generate", "write"])
@pytest.mark.slow
def test_a_build_killed_with_sigkill_resumes_row_for_row_and_never_blocks(tmp_path: Path, point: str) -> None:
    out = tmp_path / "copy"
    holder, _ = _start_holder(tmp_path, out, 0, point)
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=60)
    assert holder.returncode == -signal.SIGKILL
    assert (out / LOCK_FILE).exists()  # the dead process's lock file stays, but the OS released its lock
    committed = json.loads((out / PARTIAL_DIR / "copy-small" / "state.json").read_text())["accepted"]
    assert committed == (20 if point == "generate" else 50)
    if point == "write":
        assert list(out.glob(".staging-*"))  # killed half-way through writing

    seen: list[int] = []
    resumed = _copy(out, chunk_size=10, on_accept=seen.append)
    assert seen[:1] == ([21] if point == "generate" else [])  # continued after the committed samples
    assert _lists(resumed) == _lists(_copy(None)) == _lists(datasets.load_dataset(str(out)))
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "build_info.json", "data"]


def test_a_tiny_build_warns_in_one_line_without_source_lines(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "hf_symbolinv.commands", "data", "build", "copy-small", "--num-samples", "3"]
    command += ["--out", str(tmp_path / "t"), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0
    assert done.stderr.strip().splitlines() == [
        f"warning: {tmp_path / 't'}: split(s) validation got no sample and are left out (too few samples?)"
    ]


@pytest.mark.slow
def test_ctrl_c_during_a_parallel_build_says_interrupted_once(tmp_path: Path) -> None:
    out = tmp_path / "prop"
    command = [sys.executable, "-m", "hf_symbolinv.commands", "data", "build", "prop-small", "--out", str(out)]
    process = subprocess.Popen(
        [*command, "--num-samples", "50000", "--workers", "2", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        # A terminal's Ctrl-C reaches the whole process group; a shell's background job would ignore it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not (out / PARTIAL_DIR).exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    time.sleep(0.2)  # the workers are starting (importing) or drawing: both are quiet
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130
    assert err.decode().strip().splitlines() == ["interrupted"]  # no traceback from each worker


# ---------------------------------------------------------------------------------------------------
# Tiny builds, failures leave no debris
# ---------------------------------------------------------------------------------------------------
def test_tiny_builds_leave_empty_splits_out_and_load(tmp_path: Path) -> None:
    out = tmp_path / "ltl"
    with pytest.warns(UserWarning, match="validation"):
        dataset = dataset_builders.build(
            "ltl-35", out, BuildOptions(num_samples=5, num_symbols=0, workers=1, progress=False)
        )
    assert {name: len(split) for name, split in dataset.items()} == {"train": 4, "test": 1}
    assert _lists(datasets.load_dataset(str(out))) == _lists(dataset)
    assert json.loads((out / INFO_FILE).read_text())["splits"] == {"train": 4, "test": 1}
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "build_info.json", "data"]
    with pytest.warns(UserWarning, match="validation, test"):
        one = dataset_builders.build("copy-small", tmp_path / "one", BuildOptions(num_samples=1, progress=False))
    assert list(one) == ["train"] and len(one["train"]) == 1
    assert _lists(
        dataset_builders.build("ltl-35", out, BuildOptions(num_samples=5, num_symbols=0, progress=False))
    ) == _lists(dataset)  # read back, empty split and all


def test_a_propositional_build_without_symbols_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "new" / "prop"
    with pytest.raises(ValueError, match="--num-symbols must be at least 1 for prop-35"):
        dataset_builders.build("prop-35", out, BuildOptions(num_samples=5, num_symbols=0, progress=False))
    assert not (tmp_path / "new").exists()


def test_no_sample_at_all_is_a_clear_error_that_leaves_nothing(tmp_path: Path) -> None:
    never = dataclasses.replace(LTL_TASK, solve=lambda formula, timeout: ("unsat", None), fallback=None)
    out = tmp_path / "new" / "grid"
    options = {"num_samples": 1, "num_symbols": 1, "max_size": 3, "workers": 1, "progress": False}
    with pytest.raises(EmptyDatasetError) as caught:
        build_logic(never, CONFIGS["ltl-heatmap"], _ABOUT, out, BuildOptions(**options))
    _one_line(caught, out, "no sample of ltl-heatmap")
    assert not (tmp_path / "new").exists()  # the folders it created are gone
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(EmptyDatasetError):
        build_logic(never, CONFIGS["ltl-heatmap"], _ABOUT, existing, BuildOptions(**options))
    assert existing.is_dir() and not list(existing.iterdir())


def test_a_failed_write_leaves_only_the_resumable_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "copy"
    calls = []
    real = output.write_parquet

    def disk_full(dataset, path):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(dataset, path)

    monkeypatch.setattr(output, "write_parquet", disk_full)
    with pytest.raises(OSError, match="No space"):
        _copy(out, chunk_size=10)
    assert sorted(p.name for p in out.iterdir()) == [PARTIAL_DIR]  # no staging folder, no lock, no half dataset
    monkeypatch.undo()
    seen: list[int] = []
    assert _lists(_copy(out, on_accept=seen.append)) == _lists(_copy(None)) and seen == []  # nothing redone


def test_an_interruption_before_the_first_commit_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "new" / "copy"

    def interrupt(accepted: int) -> None:
        if accepted == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _copy(out, chunk_size=10, on_accept=interrupt)
    assert not (tmp_path / "new").exists()  # nothing was committed: nothing to resume


def test_an_interruption_while_writing_resumes_to_the_same_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "copy"

    def card(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(copy_task, "_card", card)
    with pytest.raises(KeyboardInterrupt):
        _copy(out)
    assert sorted(p.name for p in out.iterdir()) == [PARTIAL_DIR]
    monkeypatch.undo()
    assert _lists(_copy(out)) == _lists(_copy(None))


# ---------------------------------------------------------------------------------------------------
# Output paths
# ---------------------------------------------------------------------------------------------------
def test_an_output_path_that_is_a_file_or_under_one_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "file"
    file.write_text("mine")
    with pytest.raises(OutputDirError) as caught:
        _copy(file)
    _one_line(caught, file, "not a directory")
    with pytest.raises(OutputDirError) as caught:
        _copy(file / "sub" / "out")
    _one_line(caught, file / "sub" / "out", f"{file} is not a directory")
    assert file.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    assert main(["data", "build", "copy-small", "--out", str(file / "out"), "--num-samples", "5", "--quiet"]) == 2
    assert f"cannot create {file / 'out'}" in capsys.readouterr().err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc (Linux)")
def test_an_output_path_that_cannot_be_created_is_a_clear_error() -> None:
    out = Path("/proc/symbolinv-no-such-dir/out")  # no one may create folders in /proc, not even root
    with pytest.raises(OutputDirError) as caught:
        _copy(out)
    _one_line(caught, f"cannot create {out}")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write in a read-only folder")
def test_a_read_only_output_folder_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        with pytest.raises(OutputDirError) as caught:
            _copy(out)
        _one_line(caught, f"cannot write in {out}")
        with pytest.raises(OutputDirError, match="cannot create"):
            _copy(out / "sub")
    finally:
        out.chmod(0o755)


# ---------------------------------------------------------------------------------------------------
# DeepLTL files
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (b"", 1, "empty file"),
        (b"\n  \n\n", 1, "empty file"),
        (b"&aXb\na;b;{1}\nX\x00\x01\n{a}\n", 3, "binary data"),
        (b"&aXb\na;b;{1}\nXa\n{\xe9}\n", 4, "not UTF-8 text (byte 0xe9)"),
        (b"\xff\xfe&\x00a\x00", 1, "binary data"),  # UTF-16
    ],
)
def test_load_deepltl_refuses_empty_and_binary_files_naming_path_and_line(
    tmp_path: Path, content: bytes, line: int, message: str
) -> None:
    (tmp_path / "train.txt").write_bytes(content)
    for task in ("auto", "ltl"):
        with pytest.raises(dataset_builders.DeepLTLFormatError) as caught:
            dataset_builders.load_deepltl(tmp_path, task=task)
        _one_line(caught, tmp_path / "train.txt", f"line {line}", message)
        assert caught.value.line == line


def test_load_deepltl_accepts_a_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "train.txt").write_bytes(b"\xef\xbb\xbf&aXb\r\na;b;{1}\r\n")
    dataset = dataset_builders.load_deepltl(tmp_path, check=True)
    assert dataset["train"][0] == {"input": "&aXb", "target": "a;b;{1}", "num_symbols": 2, "size": 4}
    prop = tmp_path / "prop"
    prop.mkdir()
    (prop / "test.txt").write_bytes(b"\xef\xbb\xbf<->a xor b c\na1b1c0\n")
    assert dataset_builders.load_deepltl(prop, check=True)["test"][0]["input"] == "=a^bc"


def test_load_deepltl_without_files_is_a_value_error_too(tmp_path: Path) -> None:
    for path in (tmp_path, tmp_path / "missing"):
        with pytest.raises(DeepLTLFilesNotFoundError) as caught:
            dataset_builders.load_deepltl(path)
        assert isinstance(caught.value, ValueError) and isinstance(caught.value, FileNotFoundError)
        assert isinstance(caught.value, DatasetBuildError)
        _one_line(caught, path)
