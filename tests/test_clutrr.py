"""The CLUTRR task: reading a released CLUTRR folder (CSV files as splits, the symbolic and the text form), judging, the
typed text story of ``solve``; on small files written here, and on the released files where ``../shared/data`` holds
them."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from hf_symbolinv.tasks import get_task
from hf_symbolinv.tasks.clutrr import (
    CLUTRR_RELATIONS,
    ClutrrFormatError,
    facts_of_text,
    is_clutrr_folder,
    load_clutrr,
    read_clutrr_folder,
    read_story,
)
from hf_symbolinv.tasks.vocabulary import get_vocabulary

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "clutrr_089907f8"
COLUMNS = ["", "id", "story", "query", "target", "story_edges", "edge_types", "query_edge", "genders", "task_name"]


def _row(row_id: str, names: list[str], genders: list[str], words: list[str], target: str) -> dict[str, str]:
    """A CLUTRR row of a chain: edge (i, i+1) of type words[i], the query from the first to the last person."""
    story = " ".join(f"[{names[i + 1]}] is the {word} of [{names[i]}]." for i, word in enumerate(words))
    return {
        "": "0",
        "id": row_id,
        "story": story,
        "query": repr((names[0], names[-1])),
        "target": target,
        "story_edges": repr([(i, i + 1) for i in range(len(words))]),
        "edge_types": repr(words),
        "query_edge": repr((0, len(words))),
        "genders": ",".join(f"{name}:{gender}" for name, gender in zip(names, genders)),
        "task_name": f"task_1.{len(words)}",
    }


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


AUNT = (["Donald", "Michael", "Dorothy"], ["male", "male", "female"], ["father", "sister"], "aunt")
GRANDSON = (
    ["Jason", "Scott", "Lewis", "Ann"],
    ["male", "male", "male", "female"],
    ["son", "son", "wife"],
    "son-in-law",
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    train = [_row(f"id-{i}", *AUNT) for i in range(30)] + [_row("other", *GRANDSON)]
    _write(tmp_path / "1.2,1.3_train.csv", train)
    _write(tmp_path / "1.3_test.csv", [_row("t3", *GRANDSON)])
    _write(tmp_path / "1.10_test.csv", [_row("t10", *GRANDSON)])
    _write(tmp_path / "1.2_test.csv", [_row("t2", *AUNT)])
    (tmp_path / "config.json").write_text("{}")
    return tmp_path


def test_a_clutrr_folder_reads_as_splits_named_by_file_stem_with_a_held_out_validation_part(folder: Path) -> None:
    splits = read_clutrr_folder(folder)
    # Test files in the order of their chain lengths (1.10 after 1.3), the derived train/validation first.
    assert list(splits) == ["train", "validation", "1.2,1.3_train", "1.2_test", "1.3_test", "1.10_test"]
    training = splits["1.2,1.3_train"]
    assert len(splits["train"]) + len(splits["validation"]) == len(training) == 31
    assert splits["validation"], "a tenth of 31 rows by id holds some"
    held = {row["id"] for row in splits["validation"]}
    assert held.isdisjoint(row["id"] for row in splits["train"])
    assert read_clutrr_folder(folder)["validation"] == splits["validation"], "the held-out part is the same each time"
    assert is_clutrr_folder(folder) and not is_clutrr_folder(folder / "missing")


def test_the_symbolic_form_states_the_edges_in_order_with_people_as_letters_and_asks_the_query(folder: Path) -> None:
    row = read_clutrr_folder(folder)["1.3_test"][0]
    assert (row["target"], row["k"], row["num_symbols"], row["size"]) == ("son-in-law", 3, 4, 3)
    facts, query = read_story(row["input"])
    assert [word for _, word, _ in facts] == ["son", "son", "wife"]
    people = [facts[0][0]] + [fact[2] for fact in facts]
    assert all(re.fullmatch("[a-z]", person) for person in people) and len(set(people)) == 4
    assert [fact[0] for fact in facts[1:]] == people[1:-1], "each fact starts where the previous one ended"
    assert query == (people[0], people[-1])


def test_renaming_the_people_changes_nothing_but_their_letters(folder: Path) -> None:
    renamed = (["Ann", "Bo", "Cy"], AUNT[1], AUNT[2], AUNT[3])
    _write(folder / "1.2_test.csv", [_row("same-story", *AUNT), _row("same-story-2", *renamed)])
    first, second = read_clutrr_folder(folder)["1.2_test"]
    assert first["target"] == second["target"] == "aunt"
    shape = [re.sub(r"\b[a-z]\b", "X", row["input"]) for row in (first, second)]
    assert shape[0] == shape[1] == "X father X , X sister X ? X X"
    text = read_clutrr_folder(folder, form="text")["1.2_test"]
    assert text[1]["input"] == "[Bo] is the father of [Ann]. [Cy] is the sister of [Bo]. ? [Ann] [Cy]"
    assert text[1]["target"] == "aunt"


def test_load_clutrr_gives_a_dataset_dict_and_the_cli_reader_reads_the_folder(folder: Path) -> None:
    from hf_symbolinv.routes.common import load_split

    dataset = load_clutrr(folder)
    assert set(dataset["train"].column_names) == {"input", "target", "k", "num_symbols", "size", "id"}
    split = load_split(str(folder), "clutrr", "1.10_test")
    assert split[0]["target"] == "son-in-law" and len(split) == 1


@pytest.mark.parametrize(
    "change, message",
    [
        ({"genders": "Donald:male,Michael:male,Dorothy:male"}, "'sister' but Dorothy is male"),
        ({"edge_types": "['father', 'cousin']"}, "edge type 'cousin' is not a relation word"),
        ({"target": "cousin"}, "target 'cousin' is not a relation word"),
        ({"story_edges": "[(0, 1), (1, 7)]"}, r"edge \(1, 7\) names no two of the 3 people"),
        ({"story_edges": "[(0, 1)"}, "column 'story_edges' is not a Python literal"),
        ({"query_edge": "(0, 9)"}, "query_edge"),
    ],
)
def test_a_malformed_row_is_refused_naming_the_file_and_the_row(tmp_path: Path, change: dict, message: str) -> None:
    _write(tmp_path / "1.2_test.csv", [_row("fine", *AUNT), {**_row("bad", *AUNT), **change}])
    with pytest.raises(ClutrrFormatError, match=message) as caught:
        read_clutrr_folder(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / '1.2_test.csv'} row 3: ")


def test_a_folder_without_clutrr_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ClutrrFormatError, match="no CLUTRR"):
        read_clutrr_folder(tmp_path)


def test_the_judge_compares_with_the_reference_word() -> None:
    judge = get_task("clutrr").judge
    story = "a father b , b sister c ? a c"
    assert judge(story, " aunt ", "aunt", None).correct
    verdict = judge(story, "uncle", "aunt", None)
    assert not verdict.correct and not verdict.invalid
    assert judge(story, "cousin", "aunt", None).invalid
    # Without a reference, the kinship composition table decides where the facts are basic ones; else unknown.
    assert judge(story, "aunt", None, None).correct and not judge(story, "uncle", None, None).correct
    assert judge("[Ann] is the mother of [Bo]. [Cy] is the brother of [Ann]. ? [Bo] [Cy]", "uncle", None, None).correct
    assert judge("a grandson b , b brother c ? a c", "grandson", None, None).unknown


def test_a_typed_text_story_becomes_the_symbolic_form() -> None:
    symbolic, names = facts_of_text("[Ann] is the mother of [Bo]. [Cy] is the brother of [Ann]. ? [Bo] [Cy]")
    assert symbolic == "a mother b , b brother c ? a c" and names == ["Bo", "Ann", "Cy"]
    for bad, message in [
        ("[Ann] is the mother of [Bo].", "ends with its query"),
        ("[Ann] likes [Bo]. ? [Bo] [Ann]", "is not '\\[A\\] is the RELATION of \\[B\\].'"),
        ("[Ann] is the mother of [Bo]. ? [Bo] [Zed]", "two different people of the story"),
    ]:
        with pytest.raises(ValueError, match=message):
            facts_of_text(bad)


def test_the_clutrr_vocabulary_holds_every_relation_word() -> None:
    tokens = set(get_vocabulary(get_task("clutrr").vocabulary).base_tokens)
    assert set(CLUTRR_RELATIONS) <= tokens and {",", "?"} <= tokens


@pytest.mark.skipif(
    not REAL.is_dir(), reason=f"the released CLUTRR data is not at {REAL} (it is not part of the package)"
)
def test_the_released_folder_reads_whole() -> None:
    splits = read_clutrr_folder(REAL)
    tests = [f"1.{k}_test" for k in range(2, 11)]
    assert list(splits) == ["train", "validation", "1.2,1.3_train", *tests]
    assert len(splits["1.2,1.3_train"]) == 10_094
    assert len(splits["train"]) + len(splits["validation"]) == 10_094
    assert {row["k"] for row in splits["1.2,1.3_train"]} == {2, 3}
    for k, name in zip(range(2, 11), tests):
        assert {row["k"] for row in splits[name]} == {k}, name
    tokens = set(get_vocabulary("clutrr").base_tokens)
    for rows in splits.values():
        for row in rows:
            facts, _ = read_story(row["input"])
            assert {word for _, word, _ in facts} | {row["target"]} <= tokens
    text = read_clutrr_folder(REAL, form="text")["1.4_test"][0]
    assert text["input"].count("[") >= 5 and " ? [" in text["input"]


def test_solve_answers_a_story_in_either_form_with_the_shipped_model(capsys: pytest.CaptureFixture[str]) -> None:
    from hf_symbolinv.commands import main

    text = "[Ann] is the mother of [Bo]. [Cy] is the brother of [Ann]. ? [Bo] [Cy]"
    stories = ["a father b , b sister c ? a c", text]
    assert main(["solve", "clutrr", *stories]) == 0
    out = capsys.readouterr().out
    answers = [line.split()[1] for line in out.splitlines() if line.startswith("1. ")]
    assert len(answers) == 2 and all(answer in CLUTRR_RELATIONS for answer in answers)
    assert main(["solve", "clutrr", "[Ann] likes [Bo]. ? [Bo] [Ann]"]) == 2
    assert "is not '[A] is the RELATION of [B].'" in capsys.readouterr().err


@pytest.mark.slow  # end-to-end training
def test_train_and_evaluate_read_a_clutrr_folder_as_released(
    folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import json

    from hf_symbolinv.commands import main

    tmp_path = tmp_path_factory.mktemp("outputs")  # outside the data folder, which is the fixture's tmp_path

    output = tmp_path / "run"
    tiny = ["d_model=32", "encoder_layers=1", "decoder_layers=1", "encoder_ffn_dim=64", "decoder_ffn_dim=64"]
    train = ["train", "--task", "clutrr", "--preset", "clutrr-vanilla", "--set", *tiny, "--data", str(folder)]
    assert main([*train, "--output", str(output), "--steps", "2", "--batch-size", "4", "--eval-samples", "4"]) == 0
    report = tmp_path / "report.json"
    evaluate = ["evaluate", str(output), "--data", str(folder), "--split", "1.3_test", "--report", str(report)]
    assert main([*evaluate, "--beam", "1", "--alpha-symbols"]) == 0
    written = json.loads(report.read_text())
    assert written["task"] == "clutrr" and written["count"] == 1 and 0.0 <= written["correct"] <= 1.0
    # By default a story's chain is composed two facts at a time; --whole-story asks the model the story whole.
    assert written["answered_by"] == "chain composition (beam 1, stories of up to 3 facts asked whole)"
    whole = tmp_path / "whole.json"
    assert main([*evaluate[:-1], str(whole), "--beam", "1", "--alpha-symbols", "--whole-story"]) == 0
    assert json.loads(whole.read_text())["answered_by"] == "the whole story"
    # A split the folder does not have is named with the ones it has.
    assert main([*evaluate[:4], "--split", "1.11_test", "--report", str(tmp_path / "other.json")]) == 2
