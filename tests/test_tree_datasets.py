"""The tree-to-tree datasets (DTM / DTE family) and their tasks: every target is recomputed here by walking the
trees independently, the OOD splits are lexically and structurally out of distribution, builds are
deterministic and repeat no input, the judges give known verdicts (also on garbage), and the original DTM
files are read or refused naming the line."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import datasets
import pytest

import dataset_builders
from dataset_builders.dtm import DTMFormatError
from dataset_builders.output import FEATURES
from dataset_builders.params import BuildOptions
from dataset_builders.trees import SPLITS, check_row, lisp_name, lisp_operations, pools, split_sizes, transform
from hf_symbolinv import logic
from hf_symbolinv.commands import main
from hf_symbolinv.logic import And, Atom, Const, Not, Or
from hf_symbolinv.tasks import get_task, task_for_vocabulary
from hf_symbolinv.tasks.trees import TREE_BASE_LABELS, TREE_SYMBOL_PATTERN, tree_symbol_names
from hf_symbolinv.utils.trees import parse_bracketed

SAMPLES = 60  # 48/6/6 rows in distribution, 6 per OOD split
TREE_CONFIGS = [name for name in dataset_builders.TREE_CONFIG_NAMES if name != "nnf"]
SENTENCES = ["active-logical", "passive-logical", "actpass-logical", "active-passive"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, datasets.DatasetDict]]:
    root = tmp_path_factory.mktemp("trees")
    out = {}
    for name in dataset_builders.TREE_CONFIG_NAMES:
        dataset = dataset_builders.build(name, root / name, BuildOptions(num_samples=SAMPLES, progress=False))
        out[name] = (root / name, dataset)
    return out


# ---------------------------------------------------------------------------------------------------
# Independent walkers (nothing from the builder)
# ---------------------------------------------------------------------------------------------------
def _depth(tree) -> int:
    if tree is None:
        return -1
    if isinstance(tree, str):
        return 0
    return 1 + max(_depth(tree[1]), _depth(tree[2]))


def _mirror(tree):
    return tree if tree is None or isinstance(tree, str) else (tree[0], _mirror(tree[2]), _mirror(tree[1]))


def _subtrees(tree):
    if isinstance(tree, tuple):
        yield tree
        yield from _subtrees(tree[1])
        yield from _subtrees(tree[2])


def _leaves(tree) -> list[str]:
    if tree is None:
        return []
    return [tree] if isinstance(tree, str) else _leaves(tree[1]) + _leaves(tree[2])


def _labels(tree) -> list[str]:
    return [node[0] for node in _subtrees(tree)]


def _car_cdr(row_input: str):
    """(operations, the subtree they select), by reading the root's Lisp name and walking the sentence."""
    root = parse_bracketed(row_input)
    assert re.fullmatch("C[AD]{1,4}R", root[0]), root[0]
    ops = [{"A": "CAR", "D": "CDR"}[letter] for letter in reversed(root[0][1:-1])]  # CADR: cdr, then car
    node = ("S", root[1], root[2])
    for op in ops:
        node = node[1] if op == "CAR" else node[2]
    return ops, node


def _vp_parts(vp):
    """(core VP, PP or None)."""
    if isinstance(vp[1], tuple) and vp[1][0] == "VP":
        assert vp[2][0] == "PP"
        return vp[1], vp[2]
    return vp, None


def _sentence(tree):
    """(subject, verb, object, pp, voice) of an active or passive sentence tree."""
    assert tree[0] == "S"
    core, pp = _vp_parts(tree[2])
    if isinstance(core[1], tuple) and core[1][0] == "PASS":
        assert core[1][1] == "was" and core[2][:2] == ("AGENT", "by")
        return core[2][2], core[1][2], tree[1], pp, "passive"
    return tree[1], core[1], core[2], pp, "active"


def _expected(config: str, row_input: str):
    tree = parse_bracketed(row_input)
    if config == "car-cdr-seq":
        return _car_cdr(row_input)[1]
    if config == "tree-reverse":
        return _mirror(tree)
    subject, verb, obj, pp, voice = _sentence(tree)
    assert voice == {"active-logical": "active", "passive-logical": "passive", "active-passive": "active"}.get(
        config, voice
    )
    if config == "active-passive":
        vp = ("VP", ("PASS", "was", verb), ("AGENT", "by", subject))
        return ("S", obj, vp if pp is None else ("VP", vp, pp))
    return ("LF", verb if pp is None else ("MOD", verb, pp), ("ARGS", subject, obj))


def _most_adjectives(tree) -> int:
    most = 0
    for node in _subtrees(tree):
        if node[0] == "NP":
            count, nbar = 0, node[2]
            while isinstance(nbar, tuple):
                count, nbar = count + 1, nbar[2]
            most = max(most, count)
    return most


def _measure(config: str, row_input: str) -> int:
    if config == "nnf":
        return logic.parse_prop(row_input).size
    if config == "tree-reverse":
        return _depth(parse_bracketed(row_input))
    return _most_adjectives(parse_bracketed(row_input))


def _symbols(config: str, row_input: str) -> set[str]:
    if config == "nnf":
        return set(logic.symbols_of(row_input, kind="prop"))
    return set(tree_symbol_names(row_input))


def _in_nnf(formula) -> bool:
    if isinstance(formula, Not):
        return isinstance(formula.arg, Atom)
    if isinstance(formula, And | Or):
        return all(_in_nnf(child) for child in formula.children)
    return isinstance(formula, Atom | Const)


def _same_truth_table(first, second) -> bool:
    names = sorted(set(logic.symbols_of(first)) | set(logic.symbols_of(second)))
    for values in itertools.product((False, True), repeat=len(names)):
        assignment = dict(zip(names, values))
        if logic.evaluate_prop(first, assignment) != logic.evaluate_prop(second, assignment):
            return False
    return True


# ---------------------------------------------------------------------------------------------------
# The built datasets
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("config", TREE_CONFIGS)
def test_every_target_is_the_transformation_of_its_input(built, config: str) -> None:
    _, dataset = built[config]
    assert list(dataset) == list(SPLITS) and {n: len(s) for n, s in dataset.items()} == split_sizes(SAMPLES)
    voices = set()
    for split in dataset.values():
        assert split.features == FEATURES
        for row in split:
            tree = parse_bracketed(row["input"])
            assert parse_bracketed(row["target"]) == _expected(config, row["input"]), row
            assert row["num_symbols"] == len(set(tree_symbol_names(row["input"])))
            assert row["size"] == len(_labels(tree)) + len(_leaves(tree))
            assert max(_depth(tree), _depth(parse_bracketed(row["target"]))) <= 8  # the default max depth
            assert set(_labels(tree)) <= set(TREE_BASE_LABELS)  # inner labels are never symbols
            assert all(leaf in TREE_BASE_LABELS or leaf in tree_symbol_names(row["input"]) for leaf in _leaves(tree))
            if config in SENTENCES or config == "car-cdr-seq":
                sentence = ("S", tree[1], tree[2]) if config == "car-cdr-seq" else tree
                voices.add(_sentence(sentence)[4])
            check_row(config, row)
    if config in ("actpass-logical", "car-cdr-seq"):
        assert voices == {"active", "passive"}
    with pytest.raises(ValueError, match="gives"):
        check_row(config, {**dataset["train"][0], "target": "(S x y)"})


def test_nnf_targets_are_equivalent_negation_normal_forms(built) -> None:
    _, dataset = built["nnf"]
    for split in dataset.values():
        for row in split:
            source, target = logic.parse_prop(row["input"]), logic.parse_prop(row["target"])
            assert _in_nnf(target) and "=" not in row["target"] and "^" not in row["target"], row
            assert _same_truth_table(source, target), row
            assert 3 <= row["num_symbols"] == len(logic.symbols_of(source)) <= 5
            assert row["size"] == source.size and row["input"] == " ".join(row["input"].split())
            assert get_task("nnf").judge(row["input"], row["target"], row["target"]).exact
    with pytest.raises(ValueError, match="negation normal form"):
        check_row("nnf", {**dataset["train"][0], "target": dataset["train"][0]["input"]})


@pytest.mark.parametrize("config", dataset_builders.TREE_CONFIG_NAMES)
def test_ood_splits_are_lexically_and_structurally_out_of_distribution(built, config: str) -> None:
    _, dataset = built[config]
    seen = {s for name in ("train", "validation") for row in dataset[name] for s in _symbols(config, row["input"])}
    held_out = pools(True)
    held = set(held_out.letters if config == "nnf" else held_out.content)
    for row in dataset["test_ood_lexical"]:
        symbols = _symbols(config, row["input"])
        assert symbols and symbols <= held and not symbols & seen
    assert not seen & held
    training = [_measure(config, row["input"]) for name in SPLITS[:3] for row in dataset[name]]
    lexical = [_measure(config, row["input"]) for row in dataset["test_ood_lexical"]]
    structural = [_measure(config, row["input"]) for row in dataset["test_ood_structural"]]
    assert set(lexical) <= set(training)
    assert min(structural) > max(training)  # deeper trees, more adjectives, larger formulas


def test_car_cdr_seq_draws_its_operations_alike_in_every_split() -> None:
    """As in the DTM papers' data: 1..4 operations named by the root in every split, the structural split
    differing only in the sentence (more adjectives), so the operations it asks for are in distribution."""
    dataset = dataset_builders.build("car-cdr-seq", None, BuildOptions(num_samples=400, progress=False))
    counts = {name: Counter(len(_car_cdr(text)[0]) for text in split["input"]) for name, split in dataset.items()}
    assert set(counts["train"]) == {1, 2, 3, 4}
    for name in ("test_ood_lexical", "test_ood_structural"):
        assert set(counts[name]) <= {1, 2, 3, 4} and len(counts[name]) >= 3, counts
    training = {parse_bracketed(text)[0] for text in dataset["train"]["input"]}
    assert {parse_bracketed(text)[0] for text in dataset["test_ood_structural"]["input"]} <= training
    assert [_most_adjectives(parse_bracketed(text)) for text in dataset["test_ood_structural"]["input"]].count(3) > 0
    sentence = "(S (NP the dog) (VP chased (NP a cat)))"
    assert lisp_name(["CDR", "CAR"]) == "CADR" and lisp_operations("CADR") == ["CDR", "CAR"]
    assert transform("car-cdr-seq", parse_bracketed("(CADR" + sentence[2:])) == "chased"
    assert transform("car-cdr-seq", parse_bracketed("(CDAR" + sentence[2:])) == "dog"
    with pytest.raises(ValueError, match="names no 1..4 car/cdr operations"):
        transform("car-cdr-seq", parse_bracketed("(CAAAAAR" + sentence[2:]))


@pytest.mark.parametrize("config", dataset_builders.TREE_CONFIG_NAMES)
def test_no_input_repeats_within_or_across_splits(built, config: str) -> None:
    _, dataset = built[config]
    inputs = [row for split in dataset.values() for row in split["input"]]
    assert len(set(inputs)) == len(inputs)


def test_same_seed_same_rows_other_seed_other_rows(built) -> None:
    _, dataset = built["car-cdr-seq"]
    again = dataset_builders.build("car-cdr-seq", None, BuildOptions(num_samples=SAMPLES, progress=False))
    other = dataset_builders.build("car-cdr-seq", None, BuildOptions(num_samples=SAMPLES, seed=1, progress=False))
    assert {n: s.to_list() for n, s in again.items()} == {n: s.to_list() for n, s in dataset.items()}
    assert set(other["train"]["input"]) != set(dataset["train"]["input"])


def test_max_depth_bounds_every_tree_and_impossible_options_are_refused() -> None:
    small = dataset_builders.build(
        "tree-reverse", None, BuildOptions(num_samples=20, max_size=6, max_depth=6, progress=False)
    )
    trees = [parse_bracketed(r[c]) for split in small.values() for r in split for c in ("input", "target")]
    assert max(_depth(tree) for tree in trees) == 6
    with pytest.raises(ValueError, match="max_depth 5 leaves no room"):
        dataset_builders.build("car-cdr-seq", None, BuildOptions(num_samples=20, max_depth=5, progress=False))
    with pytest.raises(ValueError, match="must exceed the training maximum 2"):
        dataset_builders.build("active-logical", None, BuildOptions(num_samples=20, max_size=2, progress=False))
    with pytest.raises(ValueError, match="letters per formula"):
        dataset_builders.build("nnf", None, BuildOptions(num_samples=20, num_symbols=2, progress=False))


def test_cards_name_the_splits_and_the_reconstruction(built) -> None:
    for config in ("active-logical", "nnf"):
        out, dataset = built[config]
        card = (out / "README.md").read_text()
        assert card.startswith("---\n") and f"# {config}" in card
        for name, split in dataset.items():
            assert f"| {name} | {len(split)} |" in card
        assert "check failed 0" in card
        assert ("reconstruction of the DTM paper's data" in card) == (config != "nnf")
    loaded = datasets.load_dataset(str(built["active-logical"][0]))
    assert list(loaded) == list(SPLITS)
    again = dataset_builders.build(
        "active-logical", built["active-logical"][0], BuildOptions(num_samples=SAMPLES, progress=False)
    )
    assert list(again) == list(SPLITS)  # read back from the folder, the OOD splits after the others
    assert again["test_ood_lexical"].to_list() == built["active-logical"][1]["test_ood_lexical"].to_list()


def test_cli_builds_a_tree_configuration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reverse"
    assert main(["data", "build", "tree-reverse", "--out", str(out), "--num-samples", "20", "--quiet"]) == 0
    assert "wrote tree-reverse" in capsys.readouterr().out
    assert json.loads((out / "build_info.json").read_text())["splits"] == split_sizes(20)


# ---------------------------------------------------------------------------------------------------
# The tasks
# ---------------------------------------------------------------------------------------------------
REFERENCE = "(S (NP the dog) (VP chased (NP the cat)))"


@pytest.mark.parametrize(
    "prediction, correct, invalid",
    [
        (REFERENCE, True, False),
        ("( S ( NP the dog )\n(VP chased (NP the cat)) )", True, False),  # spacing does not matter
        ("(S (NP the cat) (VP chased (NP the dog)))", False, False),
        ("(S (NP the dog) (VP chased _))", False, False),
        ("dog", False, False),  # a leaf is a tree
        ("", False, True),
        ("(((", False, True),
        (")", False, True),
        ("(S a)", False, False),  # a node of one child, as the DTM papers write them: (S a _), not the reference
        ("(S a b c)", False, True),
        ("_", False, True),
        ("(S a b) trailing", False, True),
        ("(" * 3000, False, True),
        ("\x00 (( garbage", False, True),
    ],
)
def test_the_tree_judge_by_known_verdicts(prediction: str, correct: bool, invalid: bool) -> None:
    verdict = get_task("tree").judge("(S x y)", prediction, REFERENCE)
    assert (verdict.correct, verdict.exact, verdict.invalid) == (correct, correct, invalid)


def test_the_tree_task_measures_and_names_symbols() -> None:
    task = task_for_vocabulary("tree")
    assert task.name == "tree" and task.symbol_pattern == TREE_SYMBOL_PATTERN
    assert task.judge("(S x y)", REFERENCE, None).unknown
    assert task.input_size(REFERENCE) == 9 and task.input_size("(S a _)") == 2
    text = "(S (NP the x1) (VP (PASS was (ADVP dog x1)) (AGENT by (NP some Dog))))"
    assert tree_symbol_names(text) == task.symbol_names(text) == ["x1", "dog"]
    assert {"the", "was", "by", "S", "CAR", "CDR", "CADR", "CDDDDR"} <= set(TREE_BASE_LABELS)
    for words in (pools(False), pools(True)):
        assert all(tree_symbol_names(word) == [word] for word in words.content)


SOURCE, NNF = "= a ! & b c", "| & a | ! b ! c & ! a & b c"


@pytest.mark.parametrize(
    "prediction, correct, exact, invalid",
    [
        (NNF, True, True, False),
        ("|&a|!b!c&!a&bc", True, True, False),  # unspaced reads the same
        ("| & ! a & b c & a | ! b ! c", True, False, False),  # another NNF, equivalent
        (SOURCE, False, False, False),  # equivalent but not in NNF
        ("| & a ! & b c & ! a & b c", False, False, False),  # a negation over a conjunction
        ("| & a -> b ! c & ! a & b c", False, False, False),  # an implication is not an NNF connective
        ("| a b", False, False, False),  # NNF, not equivalent
        ("1", False, False, False),
        ("& a", False, False, True),
        ("", False, False, True),
        ("((", False, False, True),
        ("a b", False, False, True),
    ],
)
def test_the_nnf_judge_by_known_verdicts(prediction: str, correct: bool, exact: bool, invalid: bool) -> None:
    verdict = get_task("nnf").judge(SOURCE, prediction, NNF)
    assert (verdict.correct, verdict.exact, verdict.invalid) == (correct, exact, invalid)


def test_the_nnf_task_reads_its_source() -> None:
    task = task_for_vocabulary("nnf")
    assert task.input_size(SOURCE) == 6 and task.symbol_names(SOURCE) == ["a", "b", "c"]
    with pytest.raises(logic.LogicSyntaxError):
        task.judge("& a", NNF, None)


# ---------------------------------------------------------------------------------------------------
# The original DTM files
# ---------------------------------------------------------------------------------------------------
def _line(source: str, target: str) -> str:
    return json.dumps({"source": source, "target": target})


ACTIVE = "( S ( NP ( DET the ) ( N dog ) ) ( VP ( V ran ) ) )"
LOGICAL = "( LF ( V ran ) ( ARG ( N dog ) ) )"


def test_load_dtm_reads_splits_and_makes_unary_nodes_binary(tmp_path: Path) -> None:
    (tmp_path / "train.jsonl").write_text(_line(ACTIVE, LOGICAL) + "\n" + _line("( X a b )", "( X b a )") + "\n")
    (tmp_path / "dev.jsonl").write_text("\n" + _line("( X a b )", "b") + "\n\n")
    (tmp_path / "ood_lexical.jsonl").write_text(_line("( X c d )", "( X d c )"))
    (tmp_path / "notes.txt").write_text("not a split")
    dataset = dataset_builders.load_dtm(tmp_path)
    assert list(dataset) == ["train", "validation", "test_ood_lexical"]
    assert dataset["train"].features == FEATURES
    assert dataset["train"][0] == {
        "input": "(S (NP (DET the _) (N dog _)) (VP (V ran _) _))",
        "target": "(LF (V ran _) (ARG (N dog _) _))",
        "num_symbols": 2,  # dog, ran ("the" is a function word)
        "size": 9,
    }
    assert dataset["train"][1]["target"] == "(X b a)" and dataset["validation"][0]["target"] == "b"
    assert len(dataset["validation"]) == 1


@pytest.mark.parametrize(
    "lines, line, message",
    [
        ([_line(ACTIVE, LOGICAL), '{"source": "( X a b )", "target": '], 2, "not JSON"),
        ([json.dumps({"source": ACTIVE})], 1, "missing key 'target'"),
        ([_line(ACTIVE, LOGICAL), "", _line("( S ( NP the dog )", LOGICAL)], 3, "'source' is not a tree.*position"),
        ([_line(ACTIVE, "( X a b c )")], 1, "'target' is not a tree: node 'X' at position 0 has 3 children"),
        ([_line(ACTIVE, "( X a ) )")], 1, r"unexpected '\)' at position 8"),
        (["[1, 2]"], 1, "expected a JSON object"),
        ([json.dumps({"source": 3, "target": "a"})], 1, "'source' is not a string"),
    ],
)
def test_load_dtm_names_the_file_and_line_of_a_malformed_row(
    tmp_path: Path, lines: list[str], line: int, message: str
) -> None:
    (tmp_path / "test.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DTMFormatError, match=message) as caught:
        dataset_builders.load_dtm(tmp_path)
    assert isinstance(caught.value, ValueError) and caught.value.line == line
    assert str(caught.value).startswith(f"{tmp_path / 'test.jsonl'}, line {line}: ")


def test_load_dtm_refuses_a_folder_without_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no \\*.jsonl or \\*.json files"):
        dataset_builders.load_dtm(tmp_path)
    with pytest.raises(ValueError, match="is not a directory"):
        dataset_builders.load_dtm(tmp_path / "missing")
