"""Training (Trainer and Accelerate), resuming, evaluation metrics and the model subcommands."""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import torch
from helpers import TINY, tiny_overrides
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, Seq2SeqTrainer, Seq2SeqTrainingArguments

from hf_symbolinv import SymbolInvConfig, SymbolInvForConditionalGeneration, SymbolInvTokenizer
from hf_symbolinv.commands import main
from hf_symbolinv.evaluation import (
    alpha_covariance_of,
    evaluate_answers,
    evaluate_model,
    judge,
    save_heatmap,
)
from hf_symbolinv.models.symbolinv.streams import stream_table
from hf_symbolinv.training import SymbolInvDataCollator, semantic_metrics, tokenize_dataset

REPO = Path(__file__).resolve().parents[1]


def _losses(log_history: list[dict]) -> list[float]:
    return [entry["loss"] for entry in log_history if "loss" in entry]


# --------------------------------------------------------------------------------------------------
# Trainer
# --------------------------------------------------------------------------------------------------
def test_trainer_lowers_the_loss_saves_and_resumes(prop_data: Path, tmp_path: Path) -> None:
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    dataset = datasets.load_dataset(str(prop_data))
    train = tokenize_dataset(dataset["train"], tokenizer)
    evaluation = tokenize_dataset(dataset["validation"], tokenizer)

    def trainer_for(steps: int) -> Seq2SeqTrainer:
        torch.manual_seed(0)
        model = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset("prop-best", **tiny_overrides()))
        args = Seq2SeqTrainingArguments(
            output_dir=str(tmp_path / "run"),
            max_steps=steps,
            per_device_train_batch_size=16,
            learning_rate=3e-3,
            gradient_accumulation_steps=2,
            logging_steps=1,
            save_steps=10,
            eval_strategy="steps",
            eval_steps=10,
            predict_with_generate=True,
            generation_max_length=12,
            report_to=[],
            disable_tqdm=True,
            seed=0,
            dataloader_pin_memory=False,
        )
        return Seq2SeqTrainer(
            model=model,
            args=args,
            train_dataset=train,
            eval_dataset=evaluation,
            processing_class=tokenizer,
            data_collator=SymbolInvDataCollator(tokenizer, model=model),
            compute_metrics=semantic_metrics(
                "prop", tokenizer, dataset["validation"]["input"], dataset["validation"]["target"]
            ),
        )

    trainer = trainer_for(10)
    trainer.train()
    losses = _losses(trainer.state.log_history)
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3
    metrics = [entry for entry in trainer.state.log_history if "eval_correct" in entry]
    assert metrics and 0.0 <= metrics[-1]["eval_correct"] <= 1.0  # the checker ran on generated answers
    checkpoint = tmp_path / "run" / "checkpoint-10"
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(checkpoint)
    batch = SymbolInvDataCollator(tokenizer, model=reloaded)([train[i] for i in range(4)])
    reloaded.eval()
    trainer.model.eval()
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**batch).logits, trainer.model(**batch).logits)
    # Resuming continues from the saved step rather than starting again.
    resumed = trainer_for(20)
    training_forwards = []
    resumed.model.register_forward_pre_hook(
        lambda module, args: training_forwards.append(1) if module.training else None
    )
    resumed.train(resume_from_checkpoint=str(checkpoint))
    steps = [entry["step"] for entry in resumed.state.log_history if "loss" in entry]
    assert steps == list(range(1, 21)) and resumed.state.global_step == 20
    assert len(training_forwards) <= 10 * 2  # steps 11..20 only (two accumulated batches each, or fewer at an
    # epoch's end); starting over would take twice as many


def test_gradient_accumulation_counts_tokens_not_batches(prop_data: Path) -> None:
    """With num_items_in_batch, the summed loss of two half batches equals the loss of the whole batch."""
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    train = tokenize_dataset(datasets.load_dataset(str(prop_data))["train"], tokenizer)
    torch.manual_seed(0)
    model = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset("prop-best", **tiny_overrides())).eval()
    collator = SymbolInvDataCollator(tokenizer, model=model)
    features = [train[i] for i in range(8)]
    whole = collator(features)
    items = int((whole["labels"] != -100).sum())
    with torch.no_grad():
        full = model(**whole).loss
        halves = sum(model(**collator(part), num_items_in_batch=items).loss for part in (features[:3], features[3:]))
    torch.testing.assert_close(halves, full)


# --------------------------------------------------------------------------------------------------
# Accelerate
# --------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_accelerate_example_trains_saves_and_resumes(prop_data: Path, tmp_path: Path) -> None:
    output = tmp_path / "accelerate"
    common = [
        sys.executable,
        str(REPO / "examples" / "train.py"),
        "--task",
        "prop",
        "--preset",
        "prop-best",
        "--data",
        str(prop_data),
        "--output",
        str(output),
        "--batch-size",
        "16",
        "--lr",
        "3e-3",
        "--save-every",
        "8",
        "--config-override",
        *TINY,
    ]
    first = subprocess.run([*common, "--steps", "16"], capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    assert (output / "checkpoint-8").is_dir() and (output / "checkpoint-16").is_dir()
    model = AutoModelForSeq2SeqLM.from_pretrained(output)
    assert isinstance(model, SymbolInvForConditionalGeneration)
    losses = [float(x) for x in _loss_values(first.stderr)]
    assert len(losses) >= 16 and sum(losses[-4:]) / 4 < sum(losses[:4]) / 4
    second = subprocess.run([*common, "--steps", "20"], capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resuming from" in second.stdout + second.stderr and "(step 16)" in second.stdout + second.stderr
    assert "after 20 steps" in second.stdout


@pytest.mark.slow
def test_the_accelerate_example_trains_data_parallel_on_two_cpu_processes(prop_data: Path, tmp_path: Path) -> None:
    output = tmp_path / "ddp"
    script = [str(REPO / "examples" / "train.py"), "--task", "prop", "--preset", "prop-best", "--data", str(prop_data)]
    script += ["--output", str(output), "--steps", "4", "--batch-size", "8", "--save-every", "2"]
    script += ["--config-override", *TINY]
    with socket.socket() as probe:  # a free port for the processes' rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "true"}
    done = subprocess.run([*launch, *script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "training on 2 process(es), DistributedType.MULTI_CPU" in done.stdout
    assert (output / "checkpoint-2").is_dir() and (output / "checkpoint-4").is_dir()
    assert isinstance(AutoModelForSeq2SeqLM.from_pretrained(output), SymbolInvForConditionalGeneration)
    # Without ACCELERATE_USE_CPU each process would train alone on the same OUTPUT: refused in one line.
    env.pop("ACCELERATE_USE_CPU")
    alone = subprocess.run(
        [*launch, *script[: -1 - len(TINY)], "--output", str(tmp_path / "alone"), "--config-override", *TINY],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert alone.returncode != 0 and "launched as 2 processes, but Accelerate runs each alone" in alone.stderr


def test_the_fsdp_config_is_an_accelerate_config_that_wraps_layers_the_model_has() -> None:
    from accelerate.commands.config.config_args import load_config_from_file

    from hf_symbolinv.models.symbolinv import modeling_symbolinv

    config = load_config_from_file(str(REPO / "examples" / "accelerate" / "fsdp.yaml"))
    assert config.distributed_type == "FSDP"
    layers = config.fsdp_config["fsdp_transformer_layer_cls_to_wrap"].split(",")
    assert layers and all(isinstance(getattr(modeling_symbolinv, name, None), type) for name in layers)
    assert set(layers) == set(modeling_symbolinv.SymbolInvPreTrainedModel._no_split_modules)


def _loss_values(progress: str) -> list[str]:
    import re

    # tqdm redraws the bar; each step's postfix carries the loss of that step.
    seen: list[str] = []
    for step, loss in re.findall(r"\| (\d+)/\d+ \[[^\]]*loss=([0-9.]+)", progress):
        if len(seen) < int(step):
            seen.append(loss)
    return seen


# --------------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------------
def test_evaluation_returns_the_known_metrics() -> None:
    sources = ["&aXb", "U!ab", "&a!a", "Xc"]
    answers = [["a;b;{1}"], ["{b}", "b;{1}"], ["a;{1}"], ["a;b;{1}", "1;c;{1}"]]
    references = ["a;b;{1}", "b;{1}", "", "1;c;{1}"]
    report = evaluate_answers("ltl", sources, answers, references)
    # correct: &aXb yes, U!ab yes ({b}: b at once), &a!a no (unsatisfiable), Xc no (c never holds next).
    assert report.correct == pytest.approx(2 / 4)
    assert report.exact == pytest.approx(1 / 4)  # only the first answer equals its reference
    assert report.invalid == 0 and report.unknown == 0
    assert report.top_n[2] == pytest.approx(3 / 4)  # Xc's second answer is right
    assert report.heatmap["2"] == {"4": 1.0} and report.by_symbols == {1: 0.0, 2: 1.0}
    invalid = evaluate_answers("prop", ["&a!b", "|ab"], [["a1b"], ["a1"]], ["a1b0", "a1"])
    assert invalid.invalid == pytest.approx(1 / 2) and invalid.correct == pytest.approx(1 / 2)
    assert judge("prop", "&ab", "a1b1c1").correct is False  # assigning an absent symbol is wrong
    copies = evaluate_answers("copy", ["abc", "abca"], [["abc"], ["abc"]])
    assert copies.correct == pytest.approx(0.5) and copies.mean_edit_distance == pytest.approx(0.5)


def test_alpha_covariance_of_a_non_invariant_predictor() -> None:
    num_base = 10

    def always_first_slot(inputs: list[list[int]]) -> list[list[int]]:
        return [[num_base] for _ in inputs]  # answers "a" whatever the input: not invariant

    def copies_its_first_symbol(inputs: list[list[int]]) -> list[list[int]]:
        return [[next(t for t in x if t >= num_base)] for x in inputs]  # invariant

    inputs = [[6, num_base + 0, num_base + 1, 1]]  # &ab: two symbols renamed into three slots: 6 variants
    assert alpha_covariance_of(copies_its_first_symbol, inputs, num_base, [0, 1, 2]) == [1.0]
    # The undone answers are a (when a stayed a), b (when b became a), and a symbol outside the input
    # otherwise: 3 distinct results out of 6 -> 1 - 2/5.
    assert alpha_covariance_of(always_first_slot, inputs, num_base, [0, 1, 2]) == [pytest.approx(0.6)]


def test_heatmap_png_is_written_and_non_empty(tmp_path: Path) -> None:
    report = evaluate_answers("ltl", ["&aXb", "Xc", "&a&bc"], [["a;b;{1}"], ["{1}"], ["&a&bc;{1}"]])
    save_heatmap(report, tmp_path / "heatmap.json", tmp_path / "heatmap.png")
    png = (tmp_path / "heatmap.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 2000
    data = json.loads((tmp_path / "heatmap.json").read_text())
    assert data["accuracy"]["1"]["2"] == 0.0 and data["accuracy"]["3"]["5"] == 1.0


def test_sit_alpha_covariance_is_one_and_fixed_baseline_can_be_lower(prop_data: Path) -> None:
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    sources = list(datasets.load_dataset(str(prop_data))["test"]["input"])[:8]
    for preset, invariant in (("prop-best", True), ("prop-vanilla", False)):
        torch.manual_seed(0)
        model = SymbolInvForConditionalGeneration(
            SymbolInvConfig.from_preset(preset, **{**tiny_overrides(), "init_std": 0.5})
        ).eval()
        report = evaluate_model(
            model,
            tokenizer,
            "prop",
            sources,
            num_beams=1,
            alpha_symbol_counts=(2, 3),
            alpha_pool=4,
            max_perm=24,
            progress=False,
            max_new_tokens=8,
        )
        values = list(report.alpha_covariance.values())
        assert values
        if invariant:
            assert all(v == 1.0 for v in values)
        else:
            assert min(values) < 1.0


# --------------------------------------------------------------------------------------------------
# The model subcommands
# --------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_cli_train_evaluate_and_solve(prop_data: Path, tmp_path: Path, capsys, caplog) -> None:
    output = tmp_path / "cli"
    assert (
        main(
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
                "6",
                "--batch-size",
                "16",
                "--eval-samples",
                "8",
                "--set",
                *TINY,
            ]
        )
        == 0
    )
    card = (output / "model" / "README.md").read_text()
    assert "Invariance guarantee" in card and "prop-best" in card and "O(S·L²)" in card
    # A checkpoint keeps the token ids of the generation settings only: the defaults that generating during
    # training fills in (max_length 20) would clash with every max_new_tokens of a model loaded from it.
    checkpoint = output / "checkpoints" / "checkpoint-6"
    assert set(json.loads((checkpoint / "generation_config.json").read_text())) <= {
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "decoder_start_token_id",
        "transformers_version",
    }
    loaded, loaded_tokenizer = (
        AutoModelForSeq2SeqLM.from_pretrained(checkpoint),
        AutoTokenizer.from_pretrained(checkpoint),
    )
    with caplog.at_level(logging.WARNING):
        loaded.generate(**loaded_tokenizer(["& a b"], return_tensors="pt"), max_new_tokens=4)
    assert not [record for record in caplog.records if "max_length" in record.getMessage()]
    assert (
        main(
            [
                "evaluate",
                str(output),
                "--data",
                str(prop_data),
                "--limit",
                "10",
                "--beam",
                "1",
                "--alpha-symbols",
                "2",
                "--max-perm",
                "4",
                "--alpha-samples",
                "3",
            ]
        )
        == 0
    )
    report = json.loads((output / "model" / "eval-test.json").read_text())
    assert report["count"] == 10 and report["alpha_covariance"]["2"] == 1.0
    assert (output / "model" / "heatmap-test.png").stat().st_size > 1000
    capsys.readouterr()
    assert main(["solve", str(output), "& req | grant ! ack", "--beam", "1"]) == 0
    printed = capsys.readouterr().out
    assert "answered by: " in printed and "\n1. " in printed  # the model that answered, then its answers
    assert any(state in printed for state in ("[correct]", "[incorrect]", "[invalid]"))
    assert (
        main(
            [
                "train",
                "--task",
                "ltl",
                "--preset",
                "prop-best",
                "--data",
                str(prop_data),
                "--output",
                str(tmp_path / "wrong"),
            ]
        )
        == 2
    )


def _train_argv(prop_data: Path, output: Path) -> list[str]:
    return ["train", "--task", "prop", "--preset", "prop-best", "--data", str(prop_data), "--output", str(output)]


def _train_log(prop_data: Path, output: Path, *extra: str) -> list[dict]:
    argv = _train_argv(prop_data, output)
    argv += ["--steps", "4", "--batch-size", "16", "--eval-samples", "4", "--eval-steps", "4", "--set", *TINY, *extra]
    assert main(argv) == 0
    return json.loads((output / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())["log_history"]


def test_cli_train_compiled_buckets_batches_counts_graphs_and_starts_with_the_eager_loss(
    prop_data: Path, tmp_path: Path, capsys
) -> None:
    model = SymbolInvForConditionalGeneration(SymbolInvConfig.from_preset("prop-best", **tiny_overrides()))
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    rows = datasets.Dataset.from_dict({"input": ["& a b", "| ! c & a d", "b"], "target": ["a1b1", "c0", "b1"]})
    rows = tokenize_dataset(rows, tokenizer)
    batch = SymbolInvDataCollator(tokenizer, model=model, bucketed=True)([rows[i] for i in range(3)])
    assert batch["input_ids"].shape[1] % 8 == 0 and batch["labels"].shape[1] % 8 == 0
    assert torch.equal(
        batch["stream_slots"], stream_table(batch["input_ids"], batch["attention_mask"], model.config)[0]
    )

    eager = _train_log(prop_data, tmp_path / "eager")
    compiled = _train_log(prop_data, tmp_path / "compiled", "--compile", "aot_eager")
    graphs = [entry["compiled_graphs"] for entry in compiled]
    # At most one graph per bucket (every batch of 16 samples here pads to 16 positions or fewer, 8 target positions,
    # and 1-3 streams), built once.
    assert 1 <= graphs[-1] <= 6 and graphs == sorted(graphs)
    assert "compiled_graphs" not in eager[0]
    # The first step's loss (before any update) is the same function of the same batch, padded differently.
    assert compiled[0]["step"] == eager[0]["step"] == 1
    assert compiled[0]["loss"] == pytest.approx(eager[0]["loss"], rel=1e-4)
    argv = _train_argv(prop_data, tmp_path / "x")
    capsys.readouterr()
    assert main([*argv, "--compile", "no-such-backend"]) == 2
    assert "--compile no-such-backend: not a torch.compile backend (" in capsys.readouterr().err


def test_the_training_recipe_is_the_references_and_rejects_unknown_fields(tmp_path) -> None:
    from transformers import Seq2SeqTrainingArguments

    from hf_symbolinv.training import recipe_arguments

    arguments = Seq2SeqTrainingArguments(output_dir=str(tmp_path), max_steps=100, **recipe_arguments())
    assert (arguments.learning_rate, arguments.adam_beta1, arguments.adam_beta2) == (1e-3, 0.9, 0.95)
    assert (arguments.weight_decay, arguments.max_grad_norm) == (0.1, 1.0)
    assert arguments.lr_scheduler_type == "cosine" and arguments.get_warmup_steps(100) == 5
    assert recipe_arguments(learning_rate=3e-4)["learning_rate"] == 3e-4
    with pytest.raises(ValueError, match="not a field of the training recipe: lr"):
        recipe_arguments(lr=3e-4)


def test_cli_warm_up_is_the_references_1000_steps_or_a_fifth_of_a_shorter_run(capsys) -> None:
    from hf_symbolinv.commands.seq2seq_route import _warmup

    from hf_symbolinv.commands.cli import build_parser
    from hf_symbolinv.training import default_warmup_steps

    assert [default_warmup_steps(steps) for steps in (1, 10, 5000, 7000, 50_000)] == [1, 2, 1000, 1000, 1000]
    parser = build_parser()
    base = ["train", "--task", "prop", "--preset", "prop-small", "--data", "d", "--output", "o"]
    assert _warmup(parser.parse_args(base), 7000) == 1000
    assert _warmup(parser.parse_args([*base, "--warmup-steps", "300"]), 7000) == 300
    assert _warmup(parser.parse_args([*base, "--warmup-ratio", "0.1"]), 7000) == 0.1
    for bad in (["--warmup-ratio", "1.5"], ["--warmup-ratio", "-0.1"], ["--warmup-steps", "0"]):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([*base, *bad])
        assert exit_info.value.code == 2 and bad[0] in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--warmup-steps", "10", "--warmup-ratio", "0.1"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_targets_option_chooses_taught_or_written_targets(prop_data: Path, tmp_path: Path, monkeypatch) -> None:
    """``--targets taught`` (the default) tokenizes with the task's teaching form, ``--targets dataset`` as written."""
    import hf_symbolinv.training as training

    asked = []

    def record(*args, task=None, **kwargs):
        asked.append(task)
        raise KeyboardInterrupt  # stop before any training: only the choice is under test

    monkeypatch.setattr(training, "tokenize_dataset", record)
    argv = ["train", "--task", "prop", "--preset", "prop-small", "--data", str(prop_data), "--steps", "1"]
    for extra, expected in (([], "prop"), (["--targets", "dataset"], None)):
        assert main([*argv, "--output", str(tmp_path / str(expected)), *extra]) == 130  # "interrupted"
        assert asked == [expected]
        asked.clear()


def test_curriculum_draws_the_smallest_inputs_first_then_every_input_once_per_epoch() -> None:
    """Against a naive reference: draw ``i`` of the curriculum's ``K`` comes from the smallest
    ``ceil(sqrt(0.01 + 0.99 i / K) n)`` inputs; later draws are a permutation; the order is a function of the seed
    and the epoch (what a resumed run needs)."""
    import math
    import random

    from hf_symbolinv.training.seq2seq import CurriculumSampler

    rng = random.Random(0)
    sizes = [rng.randint(1, 20) for _ in range(500)]
    ranked = sorted(sizes)
    sampler = CurriculumSampler(sizes, curriculum_samples=300, seed=3)
    order = list(sampler)
    assert len(order) == len(sizes) == len(sampler)
    for draw, index in enumerate(order[:300]):
        pool = math.ceil(math.sqrt(0.01 + 0.99 * draw / 300) * len(sizes))
        assert sizes[index] <= ranked[pool - 1], (draw, sizes[index])
    assert sum(sizes[i] for i in order[:50]) / 50 < 5 < sum(sizes) / len(sizes)  # the first draws are small
    assert len(set(order[300:])) == 200  # after the curriculum: without replacement
    assert list(sampler) == order == list(CurriculumSampler(sizes, 300, seed=3))
    assert list(CurriculumSampler(sizes, 300, seed=4)) != order
    sampler.set_epoch(1)
    assert sorted(sampler) == list(range(len(sizes)))  # the curriculum is over: every input once
    assert sorted(CurriculumSampler(sizes, 0, seed=3)) == list(range(len(sizes)))  # no curriculum: a permutation


def test_cli_curriculum_trains_from_small_inputs_and_excludes_length_grouping(
    prop_data: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """``--curriculum STEPS`` gives the Trainer a curriculum over the inputs' lengths; with ``--group-by-length``
    it is refused in one line."""
    from hf_symbolinv.training.seq2seq import CurriculumSampler

    drawn = []
    original = CurriculumSampler.__iter__

    def record(self):
        for index in original(self):
            drawn.append((index, self.curriculum_samples))
            yield index

    monkeypatch.setattr(CurriculumSampler, "__iter__", record)
    argv = ["train", "--task", "prop", "--preset", "prop-small", "--data", str(prop_data), "--set", *TINY]
    argv += ["--steps", "2", "--batch-size", "4", "--eval-samples", "4", "--curriculum", "2"]
    assert main([*argv, "--output", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert drawn and {samples for _, samples in drawn} == {8}  # 2 steps of 4 samples
    train = datasets.load_dataset(str(prop_data), split="train")
    lengths = sorted(len(source) for source in train["input"])
    for draw, (index, _) in enumerate(drawn[:8]):  # the curriculum's draws: from the smallest share so far
        pool = math.ceil(math.sqrt(0.01 + 0.99 * draw / 8) * len(lengths))
        assert len(train[index]["input"]) <= lengths[pool - 1]
    assert main([*argv, "--group-by-length", "--output", str(tmp_path / "both")]) == 2
    err = capsys.readouterr().err
    assert "either grouped by length or drawn by a curriculum" in err and len(err.strip().splitlines()) == 1


def test_commuted_training_samples_are_correct_new_forms_of_the_same_formulas(prop_data: Path) -> None:
    """``--augment commute``'s samples: each draw a form of the row's formula with the same tokens (so the same
    length and stream count as the tokenised split says), its label the taught answer of the new form, which the
    checker judges correct; draws of one sample differ, and the same seed draws the same forms."""
    from collections import Counter

    from hf_symbolinv.tasks.prop import first_model
    from hf_symbolinv.training import CommutedTrainSet, grouping_key

    def kind(character: str) -> str:
        return "symbol" if character.isalpha() else character

    split = datasets.load_dataset(str(prop_data), split="train")
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    tokenized = tokenize_dataset(split, tokenizer, task="prop")
    drawn, again = (CommutedTrainSet(split, tokenizer, "prop", taught=True, seed=5) for _ in range(2))
    forms: dict[int, set[str]] = {}
    for _ in range(6):
        for index in range(len(split)):
            sample = drawn[index]
            assert sample == again[index]  # the same seed, the same draw: the same form
            # Decoded in the tokenizer's own names (a, b, ... in order of appearance), the answer's with the input's.
            source = tokenizer.decode(sample["input_ids"], skip_special_tokens=True).replace(" ", "")
            written = tokenizer.decode(tokenized[index]["input_ids"], skip_special_tokens=True).replace(" ", "")
            assert Counter(map(kind, source)) == Counter(map(kind, written))  # the same operators and leaves
            row = tokenized[index]
            assert grouping_key(sample["input_ids"], sample["symbol_mask"]) == grouping_key(
                row["input_ids"], row["symbol_mask"]
            )
            answer = tokenizer.decode(sample["labels"], skip_special_tokens=True).replace(" ", "")
            assert answer == first_model(source, "") and judge("prop", source, answer).correct
            forms.setdefault(index, set()).add(source)
    swappable = [i for i in forms if any(op in split[i]["input"] for op in "&|=^")]
    # Swapping two operands that differ only in their symbols' names gives the same input to a renaming-invariant
    # model (``&ab``, ``&ba``): most formulas, not all, have other forms.
    assert sum(len(forms[i]) > 1 for i in swappable) > 0.75 * len(swappable)  # 185 of 194 here
    import pickle

    fresh = CommutedTrainSet(split, tokenizer, "prop", taught=True, seed=5)
    copied = pickle.loads(pickle.dumps(fresh))  # as a data-loading worker started afresh gets it
    assert [copied[i] for i in range(20)] == [fresh[i] for i in range(20)]
    with pytest.raises(ValueError, match="task 'copy' has no commuted form"):
        CommutedTrainSet(split, tokenizer, "copy")


def test_cli_augment_commute_trains_on_commuted_samples_and_records_it(
    prop_data: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """``symbolinv train --augment commute``: the Trainer draws its batches from :class:`CommutedTrainSet`, the
    checkpoints record the option and the card's command line names it."""
    from hf_symbolinv.training import CommutedTrainSet

    served = []
    original = CommutedTrainSet.__getitem__
    monkeypatch.setattr(CommutedTrainSet, "__getitem__", lambda self, i: served.append(i) or original(self, i))
    argv = ["train", "--task", "prop", "--preset", "prop-small", "--data", str(prop_data), "--set", *TINY]
    argv += ["--steps", "2", "--batch-size", "4", "--eval-samples", "4", "--augment", "commute"]
    assert main([*argv, "--output", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert len(served) >= 8  # 2 steps of 4 samples (the Trainer may draw a batch ahead)
    from hf_symbolinv.utils.files import MANIFEST

    record = json.loads((tmp_path / "run" / "checkpoints" / "checkpoint-2" / MANIFEST).read_text())
    assert record["options"]["augment"] == "commute"
    assert "(`--augment commute`)" in (tmp_path / "run" / "model" / "README.md").read_text()


def test_prop_targets_are_taught_as_the_first_model_decision_by_decision() -> None:
    """The taught assignment against a naive reference: every symbol in order of first appearance, each 0 exactly
    when some completion of the assignment so far with it set to 0 satisfies the formula; it follows any renaming,
    and the dataset's (minimal) target stays the reference."""
    import random

    from datasets import Dataset

    from hf_symbolinv import logic
    from hf_symbolinv.models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer
    from hf_symbolinv.tasks.prop import first_model
    from hf_symbolinv.training import tokenize_dataset

    def completions(formula, names: list[str], fixed: dict[str, bool]):
        free = [name for name in names if name not in fixed]
        for values in itertools.product((False, True), repeat=len(free)):
            yield logic.evaluate_prop(formula, {**fixed, **dict(zip(free, values))})

    assert first_model("|&cb!a", "a0") == "c0b0a0"  # (c & b) | !a: minimal a0, but a comes last
    assert first_model("|&ab!c", "c0") == "a0b0c0"  # the same formula renamed c<->a
    assert first_model("&a|!bc", "a1b0") == "a1b0c0"  # forced after b0: c is still written, set to 0
    assert logic.format_assignment(logic.solve_prop("|&cb!a").assignment) == "a0"
    assert first_model("&a!a", "") == ""  # unsatisfiable: the row's target stays
    rng = random.Random(0)
    for _ in range(300):
        formula = logic.random_prop_formula(rng, rng.randint(3, 15), ["a", "b", "c", "d"])
        names = list(logic.symbols_of(formula, kind="prop"))
        if not any(completions(formula, names, {})) or all(completions(formula, names, {})):
            continue  # unsatisfiable or valid: no assignment to teach
        taught = first_model(logic.format_prop(formula), "")
        assignment = logic.parse_assignment(taught)
        order = list(assignment)
        assert order == names, taught
        for i, name in enumerate(order):
            before = {n: assignment[n] for n in order[:i]}
            assert assignment[name] == (not any(completions(formula, names, {**before, name: False})))
        assert all(completions(formula, names, assignment)) and logic.check_assignment(formula, assignment)
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    data = Dataset.from_dict({"input": ["|&cb!a"], "target": ["a0"]})
    assert tokenize_dataset(data, tokenizer, task="prop")[0]["labels"] == tokenizer(text_target="c0b0a0")["input_ids"]
    assert tokenize_dataset(data, tokenizer)[0]["labels"] == tokenizer(text_target="a0")["input_ids"]  # as written
    assert tokenize_dataset(data, tokenizer, task="prop")[0]["target"] == "a0"  # the reference stays
