"""Test session setup: never reach the network, keep Hugging Face caches out of the user's home."""

import os
import tempfile

# Set before transformers is imported by any test module (conftest is imported first).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="symbolinv-test-hf-"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# One intra-op thread: on a 2-core runner, torch's thread pool competing with pytest's own work
# (and with subprocesses) is several times slower than a single thread.
import torch  # noqa: E402

torch.set_num_threads(1)
