"""The README and the documentation pages point at things that exist.

`mkdocs build --strict` (CI) checks the links between the site's pages; these tests cover what it cannot see: the
README's and CONTRIBUTING's links (they are not site pages), the repository paths every page names in code spans,
and that the command reference has a section for every command the CLI has.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
#: The Markdown files a reader of the repository or of the site reads.
PAGES = sorted(
    [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md", *DOCS.rglob("*.md")],
    key=lambda path: str(path),
)
#: A code span naming a path under one of these is a claim that the path exists.
REPOSITORY_FOLDERS = (
    ".ci/",
    "benchmarks/",
    "dataset_builders/",
    "docs/",
    "examples/",
    "hf_symbolinv/",
    "model_cards/",
    "tests/",
)
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\s]+)`")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _served_files() -> dict[str, str]:
    """The hook's ``EXTRA_FILES`` (site path -> repository path), read without importing mkdocs."""
    tree = ast.parse((DOCS / "hooks" / "generated.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(target, ast.Name) and target.id == "EXTRA_FILES" for target in targets):
                return ast.literal_eval(node.value)
    raise AssertionError("docs/hooks/generated.py defines no EXTRA_FILES")


def _page_id(path: Path) -> str:
    return str(path.relative_to(REPO))


def _prose(path: Path) -> str:
    """The page without its fenced code blocks (commands in them name outputs that do not exist yet)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def _is_placeholder(path: str) -> bool:
    """``tests/models/<family>/``, ``prop_experiments_convert*/``, ``campaign/RUN/``: a pattern, not a path."""
    return any(mark in path for mark in "<>*{}") or any(
        part.isupper() and "." not in part for part in path.strip("/").split("/")
    )


def test_the_readme_is_a_short_front_door() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; the rest belongs in docs/"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_relative_link_of_a_page_resolves(page: Path) -> None:
    served = {DOCS / site_path: REPO / repository_path for site_path, repository_path in _served_files().items()}
    missing = []
    for target in MARKDOWN_LINK.findall(_prose(page)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page (mkdocs checks the site's anchors)
        path = Path(page.parent / target.split("#", 1)[0]).resolve()
        if not served.get(path, path).exists():
            missing.append(target)
    assert not missing, f"{_page_id(page)} links to missing files: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_repository_path_a_page_names_exists(page: Path) -> None:
    named = {
        span
        for span in CODE_SPAN.findall(_prose(page))
        if span.startswith(REPOSITORY_FOLDERS) and not _is_placeholder(span)
    }
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert not missing, f"{_page_id(page)} names paths that do not exist: {missing}"


def test_the_placeholder_rule_keeps_real_paths() -> None:
    assert _is_placeholder("tests/models/<family>/")
    assert _is_placeholder("benchmarks/results/campaign/RUN/")
    assert not _is_placeholder("benchmarks/results/campaign/RESULTS.md")
    assert not _is_placeholder("hf_symbolinv/models/")


def test_the_command_reference_has_every_command() -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    spec = importlib.util.spec_from_file_location("docs_generated", DOCS / "hooks" / "generated.py")
    assert spec is not None and spec.loader is not None
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)

    from hf_symbolinv.commands import build_parser

    reference = generated.command_reference()
    names = [name for name, _ in generated._subcommands(build_parser())]
    assert {"demo", "data", "data build", "data push", "train", "evaluate", "solve", "convert", "web"} <= set(names)
    for name in names:
        assert f"\n## symbolinv {name}\n" in reference
        assert f"usage: symbolinv {name}" in " ".join(reference.split())
    assert "\x1b[" not in reference
    assert generated.COMMANDS_BLOCK.search((DOCS / "commands.md").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_readmes_python_example_runs_and_answers_in_the_users_names(capsys) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", (REPO / "README.md").read_text(encoding="utf-8"), re.M | re.S)
    assert len(blocks) == 1, "the README has one Python example"
    assert len(blocks[0].strip().splitlines()) <= 10
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 2, printed
    assert set(re.findall(r"[a-z]+", printed[1])) >= {"rain", "snow", "wind"}, printed[1]
