"""The DTM papers' released active <-> logical folder (``NAME.json`` files of ``{"source", "target"}`` lines): read as
splits by ``symbolinv train/evaluate --data``, every tree taken by the tree task's tokenizer at the depth the papers'
structural split reaches; on small files written here, and on the released files where ``../shared/data`` holds
them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataset_builders.dtm import is_dtm_folder, load_dtm
from hf_symbolinv.models.dte.family import tree_tokenizer
from hf_symbolinv.routes.common import load_data
from hf_symbolinv.tasks.trees import is_tree_symbol
from hf_symbolinv.utils.trees import parse_bracketed, tree_depth

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "dtm_active_logical"
ACTIVE = (
    "( S ( NP ( DET some ) ( AP ( ADJ polka-dotted ) ( AP ( N cactus ) ) ) ) "
    "( VP ( V bumped ) ( NP ( DET one ) ( AP ( N elephant ) ) ) ) )"
)
LOGICAL = (
    "( LF ( V bumped ) ( ARGS ( NP ( DET some ) ( AP ( ADJ polka-dotted ) ( AP ( N cactus ) ) ) ) "
    "( NP ( DET one ) ( AP ( N elephant ) ) ) ) )"
)


def _write(path: Path, pairs: list[tuple[str, str]]) -> None:
    path.write_text("".join(json.dumps({"source": s, "target": t}) + "\n" for s, t in pairs))


def test_a_released_folder_of_json_files_reads_both_directions_mixed(tmp_path: Path) -> None:
    _write(tmp_path / "train.json", [(ACTIVE, LOGICAL), (LOGICAL, ACTIVE)])
    _write(tmp_path / "validation.json", [(LOGICAL, ACTIVE)])
    _write(tmp_path / "ood_long.json", [(ACTIVE, LOGICAL)])
    assert is_dtm_folder(tmp_path)
    dataset = load_data(str(tmp_path), "tree", "train")
    assert list(dataset) == ["train", "validation", "ood_long"]
    first, second = dataset["train"]
    assert first["input"] == second["target"] and first["target"] == second["input"]
    assert first["input"].startswith("(S (NP (DET some _) (AP (ADJ polka-dotted _) (AP (N cactus _) _)))")
    assert first["num_symbols"] == 5  # polka-dotted, cactus, bumped, one, elephant ("some" is a function word)


def test_the_tree_tokenizer_takes_the_papers_labels_unary_nodes_and_hyphenated_words() -> None:
    tokenizer = tree_tokenizer("tree", max_depth=9, max_symbols=32)
    assert is_tree_symbol("polka-dotted") and not is_tree_symbol("-dotted") and not is_tree_symbol("DET")
    batch = tokenizer([ACTIVE], [LOGICAL])
    assert set(batch["symbol_names"][0]) == {"polka-dotted", "cactus", "bumped", "one", "elephant"}
    tree = tokenizer.decode_tree(
        batch["labels"][0].tolist(), batch["label_symbols"][0].tolist(), batch["symbol_names"][0]
    )
    assert tree == parse_bracketed(LOGICAL, unary=True)

    def with_adjectives(count: int) -> str:  # the logical form's subject with `count` adjectives in all
        return LOGICAL.replace(
            "( AP ( N cactus ) )", "( AP ( ADJ red ) " * (count - 1) + "( AP ( N cactus ) )" + " )" * (count - 1)
        )

    # Training has at most 2 adjectives (depth 7 counted from 0); the papers' structural split 1 or 2 more: depth 9.
    assert tree_depth(parse_bracketed(with_adjectives(4), unary=True)) == 9
    assert tokenizer([with_adjectives(4)])["num_symbols"].tolist() == [6]
    with pytest.raises(ValueError, match="deeper than max_depth=9"):
        tokenizer([with_adjectives(5)])


def test_a_built_data_set_folder_is_not_taken_for_a_released_one(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "dataset_info.json").write_text(json.dumps({"features": {}}))
    assert not is_dtm_folder(tmp_path)


@pytest.mark.skipif(not REAL.is_dir(), reason=f"the released DTM data is not at {REAL} (it is not part of the package)")
def test_the_released_folder_reads_whole_within_the_shipped_depth() -> None:
    dataset = load_dtm(REAL)
    assert {name: len(split) for name, split in dataset.items()} == {"train": 10_000, "validation": 1_250}
    roots = {row["input"].split()[0] for row in dataset["train"]}
    assert roots == {"(S", "(LF"}, "both directions in one file"
    deepest = max(tree_depth(parse_bracketed(row[key])) for row in dataset["train"] for key in ("input", "target"))
    assert deepest == 7  # the papers count from 1: their depth 8; their structural split reaches 10, ours 9


def test_the_structural_variant_adds_adjectives_to_one_noun_phrase_in_source_and_target_alike() -> None:
    import random

    from dataset_builders.dtm import lengthen_dtm_row
    from hf_symbolinv.utils.trees import format_bracketed

    def normal(text: str) -> str:
        return format_bracketed(parse_bracketed(text, unary=True))

    row = {"input": normal(ACTIVE), "target": normal(LOGICAL)}
    longer = lengthen_dtm_row(row, 2, ["red", "big", "hot"], random.Random(3))
    assert longer is not None
    for key in ("input", "target"):
        assert longer[key].count("(ADJ ") == row[key].count("(ADJ ") + 2
        assert tree_depth(parse_bracketed(longer[key])) <= tree_depth(parse_bracketed(row[key])) + 2
    # The transformation is unchanged: the new source's noun phrases are the new target's.
    active, logical = parse_bracketed(longer["input"]), parse_bracketed(longer["target"])
    assert active[1] == logical[2][1] and active[2][2] == logical[2][2] and active[2][1] == logical[1]


def test_the_shipped_active_logical_model_is_small_half_precision_and_answers_through_the_pipeline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import torch
    from safetensors import safe_open
    from transformers import pipeline

    from hf_symbolinv.commands import main
    from hf_symbolinv.pretrained import shipped_model

    folder = shipped_model("active-logical")
    weights = folder / "model.safetensors"
    assert weights.stat().st_size <= 10 * 2**20
    with safe_open(str(weights), "pt") as handle:
        assert {handle.get_slice(name).get_dtype() for name in handle.keys()} == {"F16"}
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "symbolinv train" in card and 'shipped_model("active-logical")' in card
    pipe = pipeline("tree-transduction", model=str(folder), trust_remote_code=True, dtype=torch.float32)
    # The papers' written form, one-child nodes included, at the structural split's depth (9 from 0).
    deep = LOGICAL.replace("( AP ( N cactus ) )", "( AP ( ADJ red ) " * 3 + "( AP ( N cactus ) )" + " )" * 3)
    for source in (ACTIVE, deep):
        answer = pipe(source)[0]["generated_text"]
        parse_bracketed(answer)  # a tree, whatever the model's accuracy
    assert main(["solve", "active-logical", ACTIVE]) == 0
    assert capsys.readouterr().out.startswith("1. (")


@pytest.mark.slow  # end-to-end training
def test_train_and_evaluate_read_a_dtm_folder_as_released(tmp_path: Path) -> None:
    from hf_symbolinv.commands import main

    data = tmp_path / "data"
    data.mkdir()
    _write(data / "train.json", [(ACTIVE, LOGICAL), (LOGICAL, ACTIVE)] * 4)
    _write(data / "validation.json", [(LOGICAL, ACTIVE)])
    output = tmp_path / "run"
    tiny = ["max_depth=9", "num_steps=2", "d_model=16", "num_heads=2", "ffn_dim=32", "filler_dim=8", "num_experts=2"]
    train = ["train", "--task", "tree", "--preset", "dte-small", "--set", *tiny, "top_k=2", "--data", str(data)]
    assert main([*train, "--output", str(output), "--steps", "2", "--batch-size", "4", "--eval-samples", "2"]) == 0
    report = tmp_path / "report.json"
    assert main(["evaluate", str(output), "--data", str(data), "--split", "validation", "--report", str(report)]) == 0
    written = json.loads(report.read_text())
    assert written["count"] == 1 and 0.0 <= written["correct"] <= 1.0
