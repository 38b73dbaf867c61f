"""A saved model folder of any family, loaded the way the CLI and the web demo load it: the folder itself or the
``model/`` of a training output, the family's classes from this package (never code the folder brings), the
tokenizer checked against the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..utils.files import resolve_model_folder


def load_model(path: str, **kwargs: Any) -> tuple[Any, Any, Path]:
    folder = resolve_model_folder(path)
    model, tokenizer = load_folder(folder, **kwargs)
    check_tokenizer(tokenizer, model)
    return model, tokenizer, folder


def load_folder(folder: Path, **kwargs: Any) -> tuple[Any, Any]:
    """The model and tokenizer saved in ``folder``, never running code the folder brings (a CLI does not ask
    "run the custom code?"; a folder that needs its own code is refused in one line)."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    # Computed in float32 whatever the folder stores (the shipped models store float16, which would otherwise load as
    # float16: slow and lossy on a CPU, and a fine-tuning run would train float16 weights); a caller may ask another.
    kwargs.setdefault("dtype", torch.float32)

    bar = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()  # a model of a few MB loads in a moment: no "Loading weights" bar
    try:
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=False, **kwargs).eval()
        if not (folder / "tokenizer_config.json").is_file():
            # Without it transformers tries to build a tokenizer from nothing and says to install sentencepiece.
            raise ValueError(
                f"{folder} has no tokenizer_config.json: save the tokenizer with the model (tokenizer.save_pretrained)"
            )
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    except ValueError as error:
        if "trust_remote_code" not in str(error):
            raise
        raise ValueError(
            f"{folder / 'config.json'} needs the folder's own code (no model_type the package knows): the CLI does "
            "not run it; load it in Python with trust_remote_code=True if you trust it"
        ) from None
    finally:
        if bar:
            transformers_logging.enable_progress_bar()
    if getattr(model.config, "vocabulary", None) is None:
        # A wrapped standard encoder-decoder reads text with its own tokenizer: no task's vocabulary, no checker.
        raise ValueError(
            f"{folder} holds a {model.config.model_type} model, which has no task vocabulary: solve, evaluate and "
            "train read models of a task vocabulary; use it from Python (AutoModelForSeq2SeqLM)"
        )
    return model, tokenizer


def check_tokenizer(tokenizer: Any, model: Any) -> None:
    """A tokenizer of another vocabulary than the model's gives garbage silently: refuse it, naming both."""
    check = getattr(tokenizer, "check_matches", None)
    if check is not None:
        check(model.config)
