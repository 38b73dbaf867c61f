"""How fast the web demo starts and answers: the figures behind "starts in under 10 s, answers a propositional formula
in under 1 s" on a small CPU machine.

    python benchmarks/speed/web_startup.py                      # 3 starts, 20 requests per formula
    python benchmarks/speed/web_startup.py --starts 5 --requests 50

Each start runs `python -m hf_symbolinv.web` (what `symbolinv web` runs) on a free port, after one start that is not
counted (the first import of a fresh install compiles the package's files), and times:

* page: from launching the process to the page's first HTTP 200;
* first answer: from launching the process to the first answer of a propositional formula over Gradio's API (the
  default models load in the background after the page is up, so this includes whatever loading remains).

Then, on one running server, it times requests over the API (Gradio's queue included, as the page sends them) for a
propositional and an LTL formula, in the shipped models' default settings (beam 3, 3 answers, every answer checked,
and the exact solver's verdict). It prints the machine (CPU model, cores, versions) with the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from hf_symbolinv.utils.machine import processor_name
from hf_symbolinv.web.core import AUTOMATIC

REPO = Path(__file__).resolve().parents[2]
PROP = "& Rain | Snow ! Wind"
LTL = "request U (granted & X done)"
START_LIMIT = 120.0


def versions() -> str:
    import gradio
    import torch
    import transformers

    return (
        f"Python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"gradio {gradio.__version__}"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(ready: Callable[[], bool], process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_LIMIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the web demo exited with status {process.returncode} before {what}")
        if ready():
            return
        time.sleep(0.05)
    raise RuntimeError(f"no {what} within {START_LIMIT:g} s")


def page_is_up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def client_for(url: str) -> Any:
    from gradio_client import Client

    return Client(url, verbose=False)


def answer(client: Any, text: str) -> str:
    html, _, _ = client.predict(text, AUTOMATIC, 3, api_name="/answer")
    if "si-verdict" not in html:
        raise RuntimeError(f"no answer to {text!r}: {html[:300]}")
    return html


def start(port: int) -> subprocess.Popen:
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "hf_symbolinv.web", "--host", "127.0.0.1", "--port", str(port)]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def timed_start() -> tuple[float, float, subprocess.Popen, str]:
    """Seconds to the page and to the first propositional answer, the running server and its address."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    began = time.perf_counter()
    process = start(port)
    try:
        wait_until(lambda: page_is_up(url), process, "page")
        page = time.perf_counter() - began
        answer(client_for(url), PROP)
        first = time.perf_counter() - began
    except BaseException:
        stop(process)
        raise
    return page, first, process, url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=3, help="timed starts (after one that is not counted)")
    parser.add_argument("--requests", type=int, default=20, help="timed requests per formula")
    args = parser.parse_args()
    cores = os.cpu_count()
    command = f"python benchmarks/speed/web_startup.py --starts {args.starts} --requests {args.requests}"
    print(f"# {command} ; {date.today()}")
    print(f"# machine: {processor_name()}, {cores} cores ({platform.machine()}); {versions()}")

    _, _, process, _ = timed_start()  # the first import after an install compiles the package: not counted
    stop(process)
    pages, firsts = [], []
    for _ in range(args.starts):
        page, first, process, url = timed_start()
        pages.append(page)
        firsts.append(first)
        if len(pages) < args.starts:
            stop(process)
    print("\n| start | page up (s) | first prop answer (s) |\n|---|---|---|")
    for number, (page, first) in enumerate(zip(pages, firsts), 1):
        print(f"| {number} | {page:.2f} | {first:.2f} |")
    print(f"| median | {statistics.median(pages):.2f} | {statistics.median(firsts):.2f} |")

    try:
        client = client_for(url)
        print(f"\nprop: {PROP}\nLTL: {LTL}")
        print("\n| formula | requests | median (s) | max (s) |\n|---|---|---|---|")
        for name, text in (("prop", PROP), ("LTL", LTL)):
            answer(client, text)  # this formula's first call (the LTL checker's caches, the model's first use)
            times = []
            for _ in range(args.requests):
                began = time.perf_counter()
                answer(client, text)
                times.append(time.perf_counter() - began)
            print(f"| {name} | {len(times)} | {statistics.median(times):.3f} | {max(times):.3f} |", flush=True)
    finally:
        stop(process)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
