"""The web demo: a Gradio page that answers formulas typed in any names and renames their symbols
(``symbolinv web``; ``examples/space/app.py`` is the same page as a Hugging Face Space).

Gradio is an optional dependency (``pip install "hf_symbolinv[web]"``): only :mod:`.app` imports it, so the rest of
the package, and the demo's logic (:mod:`.core`, :mod:`.backend`, :mod:`.render`), work without it.
"""

from __future__ import annotations

import importlib.util

#: What to run where Gradio is missing.
INSTALL_HINT = 'the web demo needs Gradio: pip install "hf_symbolinv[web]" (in a checkout: pip install -e ".[web]")'


def gradio_available() -> bool:
    """Whether Gradio can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("gradio") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken spec
        return False


__all__ = ["INSTALL_HINT", "gradio_available"]
