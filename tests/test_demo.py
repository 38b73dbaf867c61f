"""The ``symbolinv demo`` command (a quick run end to end) and the copy-task helpers it is built on."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hf_symbolinv.tasks.copy import (
    CopySpec,
    exact_match,
    mean_alpha_covariance,
    mean_edit_distance,
    random_copy_string,
    rename,
    sample_copy_strings,
    sample_renamings,
)
from hf_symbolinv.utils.files import MANIFEST
from hf_symbolinv.utils.metrics import alpha_covariance, edit_distance


# ---------------------------------------------------------------------------------------------------
# Copy-task helpers
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("kitten", "sitting", 3),
        ("", "abc", 3),
        ("abc", "", 3),
        ("abc", "abc", 0),
        ("flaw", "lawn", 2),
        ("ab", "ba", 2),
        ("abcdef", "azced", 3),
    ],
)
def test_edit_distance_known_pairs(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b) == distance
    assert edit_distance(b, a) == distance


def test_exact_match_and_mean_edit_distance() -> None:
    assert exact_match(["abc", "ab", "x"], ["abc", "abc", "y"]) == pytest.approx(1 / 3)
    assert mean_edit_distance(["abc", "ab", "x"], ["abc", "abc", "y"]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        exact_match(["a"], ["a", "b"])


def test_alpha_covariance_formula() -> None:
    assert alpha_covariance(["ab", "ab", "ab"]) == 1.0
    assert alpha_covariance(["ab", "ba", "ab", "cd"]) == pytest.approx(1 - 2 / 3)  # |U| = 3, n = 4
    assert alpha_covariance(["a", "b", "c"]) == 0.0
    with pytest.raises(ValueError):
        alpha_covariance(["a"])


def test_mean_alpha_covariance_hand_made_cases() -> None:
    # "abc" renamed within "abc": all 3! = 6 permutations are the variants.
    def identity(texts: list[str]) -> list[str]:
        return list(texts)

    def constant(texts: list[str]) -> list[str]:
        return ["abc" for _ in texts]

    def first_letter_a(texts: list[str]) -> list[str]:
        return ["a" * len(t) for t in texts]

    rng = random.Random(0)
    # A copier is renaming-equivariant: every undone prediction is the input itself.
    assert mean_alpha_covariance(identity, ["abc", "aab"], "abc", 6, rng) == 1.0
    # Ignoring the names: undoing 6 different permutations of "abc" gives 6 different strings.
    assert mean_alpha_covariance(constant, ["abc"], "abc", 6, rng) == 0.0
    # "aaa" undone is p^-1(a) repeated: each of the 3 letters for 2 of the 6 permutations -> 1 - 2/5.
    assert mean_alpha_covariance(first_letter_a, ["abc"], "abc", 6, rng) == pytest.approx(0.6)
    # "ab" within "ab": identity and the swap; the constant answer "ab" undoes to "ab" and "ba".
    assert mean_alpha_covariance(constant, ["ab"], "ab", 10, rng) == 0.0


def test_sample_renamings_are_distinct_invertible_permutations() -> None:
    rng = random.Random(1)
    text = "abca"
    renamings = sample_renamings(rng, text, "abcdef", 8)
    assert len(renamings) == 8
    assert all(mapping[ch] == ch for mapping in renamings[:1] for ch in "abcdef")  # identity first
    assert len({rename(text, mapping) for mapping in renamings}) == 8
    for mapping in renamings:
        assert sorted(mapping) == sorted(mapping.values()) == list("abcdef")
        inverse = {new: old for old, new in mapping.items()}
        assert rename(rename(text, mapping), inverse) == text
    # Only 2 renamings of "ab" exist inside "ab".
    assert len(sample_renamings(rng, "ab", "ab", 10)) == 2
    with pytest.raises(ValueError):
        sample_renamings(rng, "xyz", "abc", 3)


def test_copy_strings_respect_their_spec() -> None:
    rng = random.Random(2)
    for distinct, length in [(1, 1), (3, 7), (10, 10)]:
        text = random_copy_string(rng, distinct, length)
        assert len(text) == length and len(set(text)) == distinct
    spec = CopySpec(distinct=(1, 5), length=(5, 10), alphabet="abcde")
    for text in sample_copy_strings(rng, 200, spec):
        assert 5 <= len(text) <= 10 and 1 <= len(set(text)) <= 5 and set(text) <= set("abcde")
    with pytest.raises(ValueError):
        CopySpec(distinct=(6, 10), length=(5, 10), alphabet="abcde")  # 6 characters from 5
    with pytest.raises(ValueError):
        random_copy_string(rng, 4, 3)


# ---------------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------------
def test_parser_has_the_demo_subcommand() -> None:
    from hf_symbolinv.commands import build_parser

    parser = build_parser()
    args = parser.parse_args(["demo", "--steps", "5", "--seed", "3", "--quick", "--output", "somewhere"])
    assert (args.command, args.steps, args.seed, args.quick, args.output) == ("demo", 5, 3, True, "somewhere")
    assert parser.parse_args(["demo"]).output == "symbolinv-demo"
    for bad in ([], ["demo", "--steps", "0"], ["no-such-command"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)


@pytest.fixture(scope="module")
def quick_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """One ``symbolinv demo --quick`` run through ``main``, with the result dict run_demo returned."""
    import hf_symbolinv.commands.demo as demo_module

    from hf_symbolinv.commands import main

    output = tmp_path_factory.mktemp("demo")
    captured: dict = {}
    original = demo_module.run_demo

    def capturing(*args, **kwargs):
        captured.update(original(*args, **kwargs))
        return captured

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(demo_module, "run_demo", capturing)
        assert main(["demo", "--quick", "--output", str(output)]) == 0
    return captured, output


@pytest.mark.slow
def test_demo_sit_is_renaming_invariant(quick_demo: tuple[dict, Path]) -> None:
    results, _ = quick_demo
    sit = results["models"]["sit"]
    # Guaranteed by the architecture, however little it was trained.
    assert sit["alpha_covariance"] == 1.0
    assert sit["alpha_covariance_more"] == 1.0
    assert sit["more_symbols_runnable"] is True
    # Even the quick run learns to copy, and carries that over to more symbols than it trained on.
    assert sit["accuracy"] >= 0.8 and sit["accuracy_more"] >= 0.8
    assert sit["edit_distance"] < 1.0 and sit["edit_distance_more"] < 1.0


@pytest.mark.slow
def test_demo_baseline_cannot_run_more_symbols(quick_demo: tuple[dict, Path]) -> None:
    results, _ = quick_demo
    baseline = results["models"]["baseline"]
    assert baseline["more_symbols_runnable"] is False
    assert baseline["accuracy_more"] is None and baseline["edit_distance_more"] is None
    assert baseline["alpha_covariance_more"] is None
    assert "symbol" in baseline["more_symbols_error"]  # the model's own ValueError message
    # Measured on the training characters, and reported as measured.
    alpha_line = next(row for row in results["table"].splitlines() if row.startswith("alpha-covariance, <=5"))
    assert alpha_line.rstrip().endswith(f"{100 * baseline['alpha_covariance']:.1f}%")
    line = next(row for row in results["table"].splitlines() if row.startswith("accuracy, 6-10"))
    assert line.rstrip().endswith("n/a (cannot run)")
    # Same architecture apart from the symbol rows: five learned rows vs actual + placeholder.
    d_model = results["settings"]["d_model"]
    assert baseline["parameters"] - results["models"]["sit"]["parameters"] == 3 * d_model


@pytest.mark.slow
def test_demo_saved_model_reloads_and_generates_the_same(quick_demo: tuple[dict, Path]) -> None:
    from hf_symbolinv.commands.demo import generate_copies

    import hf_symbolinv

    hf_symbolinv.register()
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    results, output = quick_demo
    folder = output / "sit"
    assert results["reload"]["ok"] is True
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert type(model).__name__ == "SymbolInvForConditionalGeneration"
    probes = results["probe_outputs"]  # generated by the in-memory model before it was saved
    assert len(probes) >= 2
    assert generate_copies(model, tokenizer, list(probes)) == list(probes.values())


@pytest.mark.slow
def test_demo_writes_card_heatmap_and_results(quick_demo: tuple[dict, Path]) -> None:
    results, output = quick_demo
    heatmap = output / "heatmap.png"
    assert heatmap.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    card = (output / "sit" / "README.md").read_text(encoding="utf-8")
    for needed in (
        "## Intended use",
        "## Training data",
        "## Evaluation",
        "## Invariance guarantee",
        "## Limitations",
        "O(S * L^2)",
        "n/a (cannot run)",
    ):
        assert needed in card
    saved = json.loads((output / "results.json").read_text(encoding="utf-8"))
    assert saved["models"] == json.loads(json.dumps(results["models"]))
    grid = saved["heatmap"]
    assert len(grid["accuracy"]) == len(grid["distinct"]) and len(grid["accuracy"][0]) == len(grid["length"])
    # Nothing half-written or staged is left behind.
    assert not [p.name for p in output.rglob(".*") if p.name != MANIFEST]
