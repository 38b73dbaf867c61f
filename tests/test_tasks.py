"""The task registry: each task judges answers by known verdicts, and a new task is one registration."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hf_symbolinv.tasks import Judgement, Task, get_task, register_task, task_for_vocabulary, task_names


@pytest.mark.parametrize(
    "task, source, prediction, correct, invalid",
    [
        ("ltl", "&aXb", "a;b;{1}", True, False),
        ("ltl", "&aXb", "a;!b;{1}", False, False),
        ("ltl", "&aXb", "a;;b", False, True),
        ("prop", "&a|!bc", "a1b0", True, False),
        ("prop", "&a|!bc", "a0", False, False),
        ("prop", "&a|!bc", "a2", False, True),
        ("copy", "abcab", "abcab", True, False),
        ("copy", "abcab", "abcb", False, False),
        ("kinship", "a father b , b sister c ? a c", "aunt", True, False),
        ("kinship", "a father b , b sister c ? a c", "uncle", False, False),
        ("kinship", "a father b , b sister c ? a c", "cousin", False, True),
    ],
)
def test_tasks_judge_known_answers(task: str, source: str, prediction: str, correct: bool, invalid: bool) -> None:
    verdict = get_task(task).judge(source, prediction, None, 5.0)
    assert (verdict.correct, verdict.invalid) == (correct, invalid)


def test_each_task_measures_inputs_and_names_their_symbols() -> None:
    assert get_task("ltl").input_size("&aXb") == 4 and list(get_task("ltl").symbol_names("&aXb")) == ["a", "b"]
    assert list(get_task("prop").symbol_names("&a|!bc")) == ["a", "b", "c"]
    assert get_task("copy").input_size("abcab") == 5 and get_task("copy").symbol_names("abcab") == ["a", "b", "c"]
    assert get_task("prop").in_own_names("& req | ! ack grant", ["req", "ack", "grant"], False).startswith("&")
    assert task_for_vocabulary("prop").name == "prop"
    assert get_task("kinship").input_size("a father b , b sister c ? a c") == 2
    assert task_for_vocabulary("kinship").name == "kinship"
    assert task_for_vocabulary("clutrr").name == "clutrr"


def test_the_sequence_vocabularies_live_with_the_tasks_that_name_them() -> None:
    from hf_symbolinv.models.symbolinv import vocabulary as sit_copy
    from hf_symbolinv.tasks.vocabulary import VOCABULARIES, get_vocabulary

    # Each vocabulary belongs to exactly the task of its name; the SIT's Hub copy holds the same tokens.
    assert {task_for_vocabulary(name).name for name in VOCABULARIES} == {"ltl", "prop", "copy", "kinship", "clutrr"}
    for name, vocabulary in VOCABULARIES.items():
        assert get_task(name).vocabulary == name == vocabulary.name
        assert sit_copy.get_vocabulary(name).base_tokens == get_vocabulary(name).base_tokens
        assert sit_copy.get_vocabulary(name).arity_list() == vocabulary.arity_list()


def test_unknown_tasks_and_vocabularies_are_named() -> None:
    with pytest.raises(
        ValueError, match="unknown task 'sat'; choose one of clutrr, copy, kinship, ltl, nnf, prop, tree"
    ):
        get_task("sat")
    with pytest.raises(
        ValueError,
        match="no task uses the vocabulary 'clevr'; known tasks: clutrr, copy, kinship, ltl, nnf, prop, tree",
    ):
        task_for_vocabulary("clevr")


def test_a_new_task_is_one_registration() -> None:
    parity = Task(
        name="parity-test",
        vocabulary="parity-test",
        description="parity of a bit string",
        example="0110",
        intended_use="a test",
        judge=lambda source, prediction, reference, timeout: Judgement(
            correct=prediction == str(source.count("1") % 2), exact=prediction == reference
        ),
        input_size=len,
        symbol_names=lambda source: [],
    )
    try:
        register_task(parity)
        assert "parity-test" in task_names()
        from hf_symbolinv.evaluation import evaluate_answers, judge

        assert judge("parity-test", "0110", "0").correct
        report = evaluate_answers("parity-test", ["0110", "111"], [["0"], ["0"]], references=["0", "1"])
        assert report.correct == 0.5
    finally:
        from hf_symbolinv import tasks

        tasks._TASKS.pop("parity-test", None)


def test_tasks_import_neither_torch_nor_transformers() -> None:
    code = (
        "import sys, hf_symbolinv.tasks as t; t.task_names(); "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    "formula, trace",
    [("&a!a", "{0}"), ("a", "a;{0}"), ("a", "&a!a;{1}"), ("Fb", "{&b!b}"), ("Ga", "a;0;{a}")],
)
def test_ltl_traces_that_describe_no_word_are_incorrect(formula: str, trace: str) -> None:
    # Every word of such a lasso satisfies any formula, vacuously: there is none.
    verdict = get_task("ltl").judge(formula, trace, None)
    assert not verdict.correct and not verdict.invalid


def test_ltl_traces_that_describe_words_are_judged_by_the_checker() -> None:
    assert get_task("ltl").judge("a", "a;{1}", None).correct
    assert get_task("ltl").judge("Fb", "!b;{b}", None).correct
    assert not get_task("ltl").judge("Gb", "!b;{b}", None).correct


def test_a_propositional_answer_is_budgeted_by_the_symbols_of_its_input(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from transformers import AutoModelForSeq2SeqLM

    from hf_symbolinv.evaluation import seq2seq as evaluation
    from hf_symbolinv.models.registry import new_model_config
    from hf_symbolinv.models.symbolinv.tokenization_symbolinv import SymbolInvTokenizer

    budget = get_task("prop").answer_budget
    assert budget("&ab") == 5 and budget("|a&b!c") == 7  # symbol and value per symbol, and the end
    assert get_task("ltl").answer_budget is None  # a trace has no such bound
    # An untrained model's answers stop at the budget, not at max_new_tokens (the longest correct answer fits).
    torch.manual_seed(0)
    tiny = dict(d_model=16, encoder_layers=1, decoder_layers=1, encoder_ffn_dim=32, decoder_ffn_dim=32)
    model = AutoModelForSeq2SeqLM.from_config(new_model_config("prop-small", "prop", **tiny)).eval()
    tokenizer = SymbolInvTokenizer.from_preset("prop")
    sources = ["&ab", "|a&b!c", "!a"]
    generated = []
    real = evaluation.generate_answers
    monkeypatch.setattr(evaluation, "generate_answers", lambda *a, **k: generated.extend(real(*a, **k)) or generated)
    evaluation.evaluate_model(model, tokenizer, "prop", sources, num_beams=2, alpha_symbol_counts=(), progress=False)
    # One batch here: its budget is its largest input's (2 * 3 + 1), and the untrained answers run to it.
    assert max(len(tokenizer.tokenize(answer[0])) for answer in generated) == budget("|a&b!c")


@pytest.mark.parametrize("name", ["prop", "ltl"])
def test_a_commuted_sample_carries_the_target_its_datasets_write_for_the_new_form(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--augment commute``'s rewritten sample: the target is the one the dataset builder writes for the new form
    (its own draw, solve and format, as a build calls them), which the checker judges correct; for LTL it often
    differs from the row's, whose trace follows the old operand order (so keeping the row's would teach two
    conventions at once); a row the new form cannot be solved for within the budget keeps its own target."""
    import random

    from dataset_builders.ltl_random35 import LTL_TASK
    from dataset_builders.prop_random35 import PROP_TASK

    builder, task = {"prop": PROP_TASK, "ltl": LTL_TASK}[name], get_task(name)
    rng = random.Random(1)
    changed = differs = 0
    while changed < 60:
        formula = builder.draw(rng, rng.randint(5, 25), "abcde")
        status, answer = builder.solve(formula, 10.0)
        if status != "sat":
            continue
        row = (builder.format_formula(formula), builder.format_target(answer))
        source, target = task.commuted(*row, random.Random(changed))
        status, expected = builder.solve(builder.parse_formula(source), 10.0)
        assert status == "sat" and target == builder.format_target(expected)
        assert task.judge(source, target, None, 10.0).correct
        if source != row[0]:
            changed += 1
            differs += target != row[1]
    if name == "ltl":
        assert differs >= 5  # 23 of 60 here: the solver's trace follows the operands' order
    from hf_symbolinv.tasks import ltl

    monkeypatch.setattr(ltl, "WRITTEN_TRACE_WORK", 1)  # nothing solves within one unit of work: the row's trace kept
    assert get_task("ltl").commuted("&aXb", "&ab;b;{1}", random.Random(0))[1] == "&ab;b;{1}"
