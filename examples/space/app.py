"""The web demo as a Hugging Face Space: the same page as `symbolinv web`, imported from the package.

Locally: `pip install -e ".[web]"` in the repository, then `python examples/space/app.py` (or `symbolinv web`).
On a Space, Gradio's environment (GRADIO_SERVER_NAME, GRADIO_SERVER_PORT) sets the address.
"""

from hf_symbolinv.utils.threads import set_torch_threads
from hf_symbolinv.web.app import build_app, launch

set_torch_threads()  # one torch thread per request: a Space's CPUs are few and requests run side by side
demo = build_app()

if __name__ == "__main__":
    launch(demo)
