"""The web demo's results as HTML fragments (every piece of user text escaped), and the page's style sheet.

The fragments carry stable class names (``si-answer``, ``si-verdict``, ``si-error``, ...) that the style sheet
and the browser test rely on.
"""

from __future__ import annotations

from html import escape

from ..evaluation.solve import Answer
from .backend import AnswerView, RenamedAnswers, RenameView, StoryView, TreeView
from .core import TASK_NAMES, InputError, ModelEntry, ReadStory, describe_renaming

#: What each verdict means, as the page's tooltips say it.
VERDICT_HELP = {
    "correct": "the checker proved the answer right",
    "incorrect": "the checker proved the answer wrong",
    "unknown": "the checker ran out of time",
    "invalid": "the answer does not parse",
}


#: What "unknown" means where the task has no checker without a reference answer.
UNKNOWN_HELP = {
    "story": "no reference answer: CLUTRR's answers are the data set's, and the kinship table does not decide "
    "this story",
    "tree": "no reference answer: the tree task's checker compares with one",
}


def verdict_badge(verdict: str, kind: str | None = None) -> str:
    help_text = UNKNOWN_HELP.get(kind or "", VERDICT_HELP["unknown"]) if verdict == "unknown" else None
    help_text = help_text or VERDICT_HELP.get(verdict, verdict)
    return f'<span class="si-verdict si-{escape(verdict)}" title="{escape(help_text)}">{escape(verdict)}</span>'


def shorten(text: str, limit: int = 80) -> str:
    """An answer cut to ``limit`` characters (an untrained model may write a hundred tokens of nothing)."""
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} characters)"


def _code(text: str, css: str = "") -> str:
    return f'<code class="{css}">{escape(text)}</code>' if css else f"<code>{escape(text)}</code>"


def _model_name(entry: ModelEntry, folder: object) -> str:
    name = getattr(folder, "name", str(folder))
    return name if entry.folder is None or entry.shipped else entry.label


def error_html(error: InputError | str) -> str:
    """A message for bad input: for a syntax error, the input with a caret under the position."""
    message = error.message if isinstance(error, InputError) else str(error)
    parts = [f'<div class="si-error" role="alert"><p class="si-error-message">{escape(message)}</p>']
    if isinstance(error, InputError) and error.position is not None and error.source is not None:
        caret = " " * error.position + "^"
        parts.append(f'<pre class="si-caret">{escape(error.source)}\n{caret}</pre>')
    parts.append("</div>")
    return "".join(parts)


def satisfiability_html(satisfiable: bool | None, task: str) -> str:
    if satisfiable is True:
        return '<div class="si-status si-sat">Satisfiable <span class="si-note">(the exact solver)</span></div>'
    if satisfiable is False:
        what = "assignment" if task == "prop" else "trace"
        return (
            '<div class="si-status si-unsat">Unsatisfiable <span class="si-note">(the exact solver): no '
            f"{what} satisfies this formula, so no answer can be correct</span></div>"
        )
    return (
        '<div class="si-status si-undecided">Satisfiability unknown <span class="si-note">(the exact solver '
        "ran out of its budget)</span></div>"
    )


def _answer_cell(answer: Answer, task: str) -> str:
    """An answer as ``symbolinv solve`` prints it, the same whatever the names: an assignment as ``Rain = true, Wind
    = false`` over the model's own writing, a trace in infix over its Polish form (with spaces). The model's writing
    is the ``si-answer`` element in each case."""
    if answer.readable is None:  # an invalid answer, as written
        return _code(shorten(answer.text), "si-answer")
    written = _code(shorten(answer.polish or answer.text), "si-answer")
    if task == "ltl":
        cell = f'<div class="si-readable-answer">trace {_code(shorten(answer.readable), "si-trace")}</div>'
        return cell + f'<div class="si-readable">in Polish: {written}</div>'
    cell = f'<div class="si-readable-answer">{escape(shorten(answer.readable, 200))}</div>'
    return cell + f'<div class="si-readable">as the model writes it: {written}</div>'


def answers_html(view: AnswerView | StoryView | TreeView) -> str:
    """The answers to a formula, a story or a tree, with the checker's verdicts."""
    if isinstance(view, StoryView):
        return story_html(view)
    if isinstance(view, TreeView):
        return tree_html(view)
    read, solution = view.read, view.solution
    other = "infix" if read.notation == "polish" else "Polish"
    other_text = read.infix if read.notation == "polish" else read.polish_spaced
    heading = (
        f'<div class="si-read">Read as {"an" if read.task == "ltl" else "a"} {TASK_NAMES[read.task]} formula in '
        f"{'Polish' if read.notation == 'polish' else 'infix'} notation; in {other}: {_code(other_text)} · "
        f"answered by {_code(_model_name(view.model, view.folder), 'si-model')}</div>"
    )
    model_text = read.model_polish_spaced
    if model_text != read.polish_spaced:
        heading += f'<div class="si-read si-note">given to the model as {_code(shorten(model_text, 400))}</div>'
    heading += "".join(f'<div class="si-read si-note">{escape(note)}</div>' for note in read.notes)
    unsat = solution.satisfiable is False
    caption = "What the model proposed (none can be correct)" if unsat else "The model's answers, best first"
    rows = "".join(
        f'<tr><td class="si-rank">{rank}</td><td>{_answer_cell(answer, read.task)}</td>'
        f"<td>{verdict_badge(answer.verdict)}</td></tr>"
        for rank, answer in enumerate(view.answers, 1)
    )
    if solution.fallback is not None:
        first = view.answers[0].verdict if view.answers else "missing"
        rows += (
            f'<tr class="si-solver"><td class="si-rank">solver</td><td>{_answer_cell(solution.fallback, read.task)}'
            f'<div class="si-note">the model\'s first answer is {escape(first)}: this answer is the exact '
            f"solver's, not the model's</div></td><td>{verdict_badge(solution.fallback.verdict)}</td></tr>"
        )
    table = (
        f'<table class="si-table{" si-muted" if unsat else ""}"><caption>{caption}</caption>'
        f"<thead><tr><th>#</th><th>answer</th><th>checker</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return f'<div class="si-result">{satisfiability_html(solution.satisfiable, read.task)}{heading}{table}</div>'


def story_html(view: StoryView) -> str:
    """A story's answers (relation words: the relation of the query's second person to its first), best first."""
    read = view.read
    form = "text (bracketed names)" if read.form == "text" else "symbolic (facts)"
    heading = (
        f'<div class="si-read">Read as a family story in the {escape(form)} form; '
        f"answered by {_code(_model_name(view.model, view.folder), 'si-model')}</div>"
    )
    if read.form == "text":
        heading += f'<div class="si-read si-note">given to the model as {_code(shorten(read.facts, 400))}</div>'
    query = read.facts.rpartition("?")[2].split()
    people = dict(zip("abcdefghijklmnopqrstuvwxyz", read.names)) if read.form == "text" else {}
    if len(query) == 2:
        first, second = (people.get(name, name) for name in query)
        heading += (
            f'<div class="si-read si-note">asked: what is {_code(second)} to {_code(first)}? (the answer is '
            f"{_code(second)}'s relation to {_code(first)})</div>"
        )
    rows = "".join(
        f'<tr><td class="si-rank">{rank}</td><td>{_code(shorten(answer.text), "si-answer")}</td>'
        f"<td>{verdict_badge(answer.verdict, 'story')}</td></tr>"
        for rank, answer in enumerate(view.answers, 1)
    )
    table = (
        '<table class="si-table"><caption>The model\'s answers, best first</caption>'
        f"<thead><tr><th>#</th><th>relation</th><th>checker</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return f'<div class="si-result">{heading}{table}</div>'


def tree_html(view: TreeView) -> str:
    """A tree model's answer tree, the task's verdict on it and the steps the model ran."""
    answer = view.answer
    heading = (
        f'<div class="si-read">Read as a bracketed tree; answered by '
        f"{_code(_model_name(view.model, view.folder), 'si-model')} in {answer.steps} steps</div>"
    )
    rows = (
        f'<tr><td class="si-rank">1</td><td>{_code(shorten(answer.answer, 2000), "si-answer si-tree")}</td>'
        f"<td>{verdict_badge(answer.verdict, 'tree')}</td></tr>"
    )
    table = (
        '<table class="si-table"><caption>The model\'s answer tree</caption>'
        f"<thead><tr><th>#</th><th>answer</th><th>checker</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return f'<div class="si-result">{heading}{table}</div>'


def _labelled(label: str, text: str, css: str, verdict: str | None = None, kind: str | None = None) -> str:
    badge = f" {verdict_badge(verdict, kind)}" if verdict is not None else ""
    return (
        f'<div class="si-line"><div class="si-label">{escape(label)}</div>'
        f'<div class="si-value">{_code(text, css)}{badge}</div></div>'
    )


def _renamed_block(result: RenamedAnswers, style: str, story: bool = False) -> str:
    name = _model_name(result.model, result.folder) if result.folder is not None else result.model.label
    kind = "fixed embeddings" if result.model.fixed else "symbol-invariant"
    title = f'<div class="si-model-title">{_code(name, "si-model")} <span class="si-note">{kind}</span></div>'
    if result.error is not None:
        return f'<div class="si-compare">{title}<p class="si-error-message">{escape(result.error)}</p></div>'
    assert result.original is not None and result.renamed is not None and result.expected is not None
    if result.follows:
        outcome = '<p class="si-outcome si-follows">✓ Renaming the first answer gives the second</p>'
    else:
        outcome = '<p class="si-outcome si-breaks">✗ Renaming the first answer does not give the second</p>'
    what, kind = ("story", "story") if story else ("formula", None)
    original, renamed = result.original, result.renamed
    lines = (
        _labelled(f"answer to the {what}", shorten(original.text), "si-original", original.verdict, kind)
        + _labelled(
            "that answer (a relation word names nobody: renamed, it stays)" if story else "that answer, renamed",
            shorten(result.expected),
            "si-expected",
        )
        + _labelled(f"answer to the renamed {what}", shorten(renamed.text), "si-renamed", renamed.verdict, kind)
    )
    note = ""
    if result.model.fixed and style == "words":
        note = (
            '<p class="si-note">A fixed-embedding model numbers names other than single letters in order of first '
            "appearance, so a renaming between words reaches it as the same input; rename to letters to see it "
            "tell them apart.</p>"
        )
    return f'<div class="si-compare">{title}{lines}{outcome}{note}</div>'


def rename_html(view: RenameView) -> str:
    """The renaming, the renamed formula (story), and for each model its answers before and after."""
    story = isinstance(view.read, ReadStory)
    head = (
        f'<div class="si-rename-head"><p>Renaming: <span class="si-mapping">{escape(describe_renaming(view.mapping))}'
        f"</span></p><p>Renamed {'story' if story else 'formula'}: "
        f"{_code(view.renamed_formula, 'si-renamed-formula')}</p></div>"
    )
    body = "".join(_renamed_block(result, view.style, story) for result in view.results)
    return f'<div class="si-result">{head}<div class="si-compare-grid">{body}</div></div>'


#: The page's style: verdict badges, result tables, the error box. Colours work on light and dark themes.
CSS = """
.si-result { display: flex; flex-direction: column; gap: 0.6rem; }
.si-status { font-weight: 600; padding: 0.45rem 0.75rem; border-radius: 6px; }
.si-sat { background: rgba(34, 197, 94, 0.14); }
.si-unsat { background: rgba(239, 68, 68, 0.14); }
.si-undecided { background: rgba(148, 163, 184, 0.2); }
.si-note { font-weight: 400; opacity: 0.75; }
.si-read { font-size: 0.92rem; }
.si-result table.si-table { border-collapse: collapse; width: 100%; border: none !important; margin: 0; }
.si-result table.si-table caption { text-align: left; font-weight: 600; padding-bottom: 0.3rem; }
.si-result table.si-table th, .si-result table.si-table td { text-align: left; padding: 0.4rem 0.6rem;
  border: none !important; border-bottom: 1px solid rgba(128, 128, 128, 0.22) !important; vertical-align: top; }
.si-result table.si-table tr, .si-result table.si-table thead, .si-result table.si-table tbody {
  border: none !important; }
.si-result table.si-table th { font-weight: 600; white-space: nowrap; }
.si-result code { overflow-wrap: anywhere; }
.si-muted code.si-answer { opacity: 0.6; }
.si-rank { width: 2rem; opacity: 0.7; }
.si-readable { font-size: 0.88rem; opacity: 0.8; margin-top: 0.15rem; }
.si-verdict { display: inline-block; min-width: 5.5rem; text-align: center; padding: 0.1rem 0.5rem;
  border-radius: 999px; font-size: 0.85rem; font-weight: 600; }
.si-correct { background: #16a34a; color: #fff; }
.si-incorrect { background: #dc2626; color: #fff; }
.si-unknown { background: #64748b; color: #fff; }
.si-invalid { background: #a16207; color: #fff; }
.si-error { border-left: 4px solid #dc2626; background: rgba(239, 68, 68, 0.1); padding: 0.5rem 0.8rem;
  border-radius: 4px; }
.si-error-message { margin: 0; }
.si-caret { margin: 0.4rem 0 0; font-size: 0.95rem; background: transparent; padding: 0;
  font-family: var(--font-mono, monospace) !important; white-space: pre; }
.si-compare-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(280px, 1fr)); gap: 0.75rem; }
.si-compare { border: 1px solid rgba(128, 128, 128, 0.3); border-radius: 8px; padding: 0.6rem 0.8rem; }
.si-model-title { margin: 0 0 0.4rem; font-size: 1rem; font-weight: 600; }
.si-line { margin: 0.35rem 0; }
.si-label { font-size: 0.82rem; opacity: 0.75; }
.si-value { display: flex; align-items: center; gap: 0.5rem; flex-wrap: wrap; }
.si-outcome { font-weight: 600; margin: 0.5rem 0 0; }
.si-follows { color: #16a34a; }
.si-breaks { color: #dc2626; }
.si-rename-head p { margin: 0.1rem 0; }
.si-mapping { font-family: var(--font-mono, monospace); }
#card table, #card tr, #card th, #card td { border-color: rgba(128, 128, 128, 0.28) !important; }
#card th, #card td { padding: 0.3rem 0.7rem; }
"""
