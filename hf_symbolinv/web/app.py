"""The web demo as a Gradio app (the only module of the package that imports Gradio).

``build_app(models)`` makes the page; ``serve(host, port, models)`` starts it (``symbolinv web``), and the Space in
``examples/space/app.py`` imports the same app. The callbacks turn every failure into a message on the page: bad
input names its problem (a syntax error its position), a request past the time limit says so, and anything
unexpected is logged on the server and reported in one line, never as a stack trace.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# No usage statistics and no version check against Gradio's servers: set before Gradio is imported.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402 (a dependency of Gradio's)

from ..utils.threads import set_torch_threads  # noqa: E402
from .backend import MAX_TOP_N, DemoBackend  # noqa: E402
from .core import (  # noqa: E402
    AUTOMATIC,
    EXAMPLES,
    RENAMING_STYLES,
    SHIPPED_FOR_KIND,
    STORY_EXAMPLES,
    TREE_EXAMPLES,
    InputError,
    ModelEntry,
    card_excerpt,
    heatmap_image,
)
from .render import CSS, answers_html, error_html, rename_html  # noqa: E402

LOGGER = logging.getLogger(__name__)

#: Requests the page works on at once (Gradio's queue): a slow one (an LTL formula the exact solver struggles with)
#: leaves room for the others. Each runs on one thread, so a 2-core machine is not oversubscribed by much.
CONCURRENCY_LIMIT = 4
#: Requests waiting beyond the ones being worked on; more are refused with Gradio's "queue full" message.
QUEUE_SIZE = 64
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860

INTRO = """# Symbol-Invariant Transformer

Type a propositional or LTL formula in **Polish** (`& Rain | Snow ! Wind`) or **infix** (`Rain & (Snow | !Wind)`)
notation, with **any names** for its symbols. The model answers in your names (a satisfying assignment, or a
trace for LTL), the checker judges every answer, and the exact solver says whether any answer exists.
**Rename the symbols** to see the answer renamed the same way: the SIT is invariant to renaming by construction.

It also answers **family stories** (CLUTRR: `[Ann] is the mother of [Bo]. [Cy] is the brother of [Ann]. ? [Bo] [Cy]`,
or the facts `a father b , b sister c ? a c`) with the relation of the query's second person to its first, and
**bracketed trees** (`(S (NP (DET the) (AP (N dog))) (VP (V saw) (NP (DET a) (AP (N cat)))))`) with the
active <-> logical tree model."""


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _guarded(work: Callable[..., Any], failure: Callable[[str], Any]) -> Callable[..., Any]:
    """``work`` with its failures turned into ``failure(message_html)``: input errors and time-outs as they are,
    anything else logged here with its traceback and shown in one line."""

    def run(*args: Any) -> Any:
        try:
            return work(*args)
        except InputError as error:
            return failure(error_html(error))
        except Exception as error:  # the page shows a message, never a stack trace
            LOGGER.exception("the web demo failed on %r", args)
            return failure(error_html(f"something went wrong on the server: {_one_line(error)}"))

    return run


def _card_for(entry: ModelEntry, folder: Path | None = None) -> str:
    """The card excerpt(s) of the model that answered, or of the entry's models before any answer."""
    if folder is not None:
        return card_excerpt(folder)
    if entry.folder is not None:
        return card_excerpt(entry.folder)
    from ..pretrained import SHIPPED, shipped_model

    intro = (
        "Each formula gets the shipped model that answers formulas of its size and symbol count best, as `symbolinv "
        "solve` chooses: each shipped model's measured table of correct answers by size and symbol count decides. "
        f"A story (bracketed names, or a `?` query after facts) gets `{SHIPPED_FOR_KIND['story']}`, a bracketed tree "
        f"(starting with `(`, not a formula) gets `{SHIPPED_FOR_KIND['tree']}`."
    )
    cards = [card_excerpt(shipped_model(name)) for name, task in sorted(SHIPPED.items()) if task in ("prop", "ltl")]
    return "\n\n".join([intro, *cards])


def _heatmap_update(folder: Path | None) -> Any:
    path = heatmap_image(folder) if folder is not None else None
    if path is None:
        return gr.update(value=None, visible=False)
    from PIL import Image

    with Image.open(path) as image:  # a copy in memory: Gradio serves only files under its own folders
        return gr.update(value=image.copy(), visible=True)


def build_app(models: Sequence[str | Path] | None = None, backend: DemoBackend | None = None) -> gr.Blocks:
    """The demo page for the shipped models and the saved model folders ``models`` (a ``ValueError`` names a folder
    the page cannot use). ``backend`` replaces the one made from ``models`` (tests)."""
    backend = backend if backend is not None else DemoBackend(models or ())
    fixed = [entry.label for entry in backend.fixed_entries]

    def answer(text: str, label: str, top_n: float) -> tuple[str, str, Any]:
        view = backend.answer(text, label, int(top_n))
        return answers_html(view), _card_for(view.model, view.folder), _heatmap_update(view.folder)

    def rename(text: str, label: str, style: str) -> str:
        return rename_html(backend.rename(text, label, style))

    def choose(label: str) -> tuple[str, Any]:
        entry = backend.entry(label)
        return _card_for(entry), _heatmap_update(entry.folder)

    rename_intro = (
        "A random renaming of the formula's symbols, or of a story's people (to other words, or to other single "
        "letters). For each model: its answer to the formula, that answer renamed, and its answer to the renamed "
        "formula (a story's answer, a relation word, stays as it is)"
    )
    if fixed:
        rename_intro += f", for the chosen model and the fixed-embedding {'model' if len(fixed) == 1 else 'models'} "
        rename_intro += ", ".join(f"`{label}`" for label in fixed)
    with gr.Blocks(title="Symbol-Invariant Transformer", analytics_enabled=False) as demo:
        gr.Markdown(INTRO, elem_id="intro")
        with gr.Row(equal_height=False):
            with gr.Column(scale=5):
                formula = gr.Textbox(
                    label="Formula, story or tree",
                    placeholder="& Rain | Snow ! Wind  or  Rain & (Snow | !Wind)  or  a father b , b sister c ? a c",
                    elem_id="formula",
                    max_lines=3,
                    autofocus=True,
                )
                with gr.Row():
                    model = gr.Dropdown(
                        backend.labels, value=AUTOMATIC, label="Model", elem_id="model", scale=3, interactive=True
                    )
                    top_n = gr.Slider(1, MAX_TOP_N, value=3, step=1, label="Answers", elem_id="top-n", scale=2)
                answer_button = gr.Button("Answer", variant="primary", elem_id="answer-button")
                examples = (*EXAMPLES, *STORY_EXAMPLES, *TREE_EXAMPLES)
                gr.Examples(
                    [[example] for example in examples],
                    inputs=[formula],
                    examples_per_page=len(examples),  # every kind of input on the first page
                    label="Examples (click one, then Answer)",
                    elem_id="examples",
                )
            with gr.Column(scale=6):
                answers = gr.HTML(elem_id="answers")
        with gr.Row(equal_height=False):
            with gr.Column(scale=2, min_width=260):
                gr.Markdown(f"### Rename the symbols\n\n{rename_intro}.", elem_id="rename-intro")
                style = gr.Radio(list(RENAMING_STYLES), value="words", label="New names", elem_id="rename-style")
                rename_button = gr.Button("Rename the symbols", elem_id="rename-button")
            with gr.Column(scale=6):
                renamed = gr.HTML(elem_id="rename-result")
        with gr.Accordion("About the model", open=True):
            with gr.Row(equal_height=False):
                card = gr.Markdown(_card_for(backend.entry(AUTOMATIC)), elem_id="card")
                heatmap = gr.Image(
                    label="Evaluation heatmap",
                    visible=False,
                    elem_id="heatmap",
                    interactive=False,
                    buttons=["download", "fullscreen"],  # no "share": it would upload to a public host
                )

        answer_inputs = [formula, model, top_n]
        answer_outputs = [answers, card, heatmap]
        # On a failure the message replaces the answers; the model panel stays as it was (a fresh no-op update each).
        run_answer = _guarded(answer, lambda message: (message, gr.update(), gr.update()))
        answer_button.click(run_answer, answer_inputs, answer_outputs, api_name="answer")
        formula.submit(run_answer, answer_inputs, answer_outputs, api_visibility="undocumented")
        rename_button.click(
            _guarded(rename, lambda message: message), [formula, model, style], [renamed], api_name="rename"
        )
        model.change(
            _guarded(choose, lambda message: (message, gr.update())), [model], [card, heatmap], api_visibility="private"
        )
    demo.queue(default_concurrency_limit=CONCURRENCY_LIMIT, max_size=QUEUE_SIZE)
    demo.symbolinv_backend = backend  # for serve() and the tests: the models behind the page
    return demo


#: The page has no file input, so it takes no uploads: Gradio's upload route would otherwise store any file posted
#: to it in its temporary folder and serve it back to anyone (a free file host that fills the disk).
MAX_UPLOAD_BYTES = 1024
#: What a refused upload is told.
NO_UPLOADS = "this page takes no uploads"


class NoUploads:
    """ASGI middleware that refuses every request to an upload route (``/gradio_api/upload``, ``/upload``) with 403
    before its body is read, so that nothing posted there is stored."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("path", "").rstrip("/").rsplit("/", 1)[-1] == "upload":
            from starlette.responses import PlainTextResponse

            await PlainTextResponse(NO_UPLOADS, status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class StartError(ValueError):
    """The page cannot start: a host that is no address of this machine, a port in use, ...; one line naming it."""


def check_address(host: str, port: int) -> None:
    """A :class:`StartError` naming the host or the port when the page could not listen there: a host that does not
    resolve or is not an address of this machine, a port in use or not allowed."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise StartError(
            f"cannot serve on host {host!r}: not a valid address or host name ({_one_line(error)})"
        ) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does: TIME_WAIT is no conflict
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise StartError(f"port {port} is in use on {host}: choose another with --port N") from None
            if error.errno == errno.EADDRNOTAVAIL:
                raise StartError(
                    f"cannot serve on host {host!r}: not an address of this machine (127.0.0.1 for this machine "
                    "only, 0.0.0.0 for every interface)"
                ) from None
            if error.errno == errno.EACCES:
                raise StartError(f"port {port} on {host} is not allowed for this user: choose one above 1023") from None
            raise StartError(f"cannot serve on {host}:{port}: {error.strerror or error}") from None


def _warm_up(backend: DemoBackend) -> None:
    try:
        backend.warm_up()
    except Exception:  # the page still works: the first request loads the models and reports any problem
        LOGGER.exception("loading the default models in the background failed")


def launch(
    demo: gr.Blocks,
    host: str | None = None,
    port: int | None = None,
    block: bool = True,
    warm_up: bool = True,
) -> gr.Blocks:
    """Start ``demo`` on ``host``:``port`` (defaults: ``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT`` where set, as
    on a Space, else 127.0.0.1:7860); with ``warm_up`` the default models load in the background meanwhile. Never a
    share link: no tunnel through Gradio's servers."""
    host = host or os.environ.get("GRADIO_SERVER_NAME") or DEFAULT_HOST
    port = port or int(os.environ.get("GRADIO_SERVER_PORT") or DEFAULT_PORT)
    backend: DemoBackend | None = getattr(demo, "symbolinv_backend", None)
    check_address(host, port)
    try:
        demo.launch(
            server_name=host,
            server_port=port,
            share=False,
            prevent_thread_lock=True,
            css=CSS,
            theme=gr.themes.Soft(),
            footer_links=["gradio"],
            show_error=False,
            quiet=True,
            max_file_size=MAX_UPLOAD_BYTES,  # a second guard behind the middleware: Gradio's own size cap
            app_kwargs={"middleware": [Middleware(NoUploads)]},
        )
    except (OSError, RuntimeError, ValueError) as error:
        # Gradio's own words ("Cannot find empty port in range ...") name neither what to change nor the host.
        if backend is not None:
            backend.close()
        raise StartError(f"cannot serve the web page on {host}:{port}: {_one_line(error)}") from None
    if warm_up and backend is not None:  # only once the page is up: a failed start leaves nothing running
        threading.Thread(target=_warm_up, args=(backend,), name="symbolinv-web-warm-up", daemon=True).start()
    if block:
        print(f"the web demo is at {demo.local_url} (Ctrl+C stops it)", flush=True)
        demo.block_thread()
    return demo


def serve(
    host: str | None = None,
    port: int | None = None,
    models: Sequence[str | Path] | None = None,
    threads: int | None = None,
    block: bool = True,
) -> gr.Blocks:
    """``symbolinv web``: the page for the shipped models and ``models``, served until interrupted (or, with
    ``block=False``, in the background: call ``close()`` on the result)."""
    set_torch_threads(threads)  # one thread a request unless told otherwise: requests run side by side
    return launch(build_app(models), host, port, block=block)
