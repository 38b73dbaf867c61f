"""The ``symbolic-generation`` pipeline: strings with any symbol names in, answers in the same names out.

transformers 5 removed ``text2text-generation``; this pipeline takes its place for the family. A
folder saved by ``SymbolInvForConditionalGeneration.save_pretrained`` records it in
``config.custom_pipelines``, so ``pipeline("symbolic-generation", model=folder,
trust_remote_code=True)`` works where this package is not installed.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from transformers import Pipeline

from .symbols import SymbolRule

PIPELINE_TASK = "symbolic-generation"
#: Models up to this size answer one input on one CPU thread (see ``_forward``).
SMALL_MODEL_PARAMETERS = 20_000_000
#: Names of whitespace-separated symbols when the caller gives no rule: identifiers in any script (a letter or
#: underscore, then letters, digits, underscores, dots and primes: `p`, `Q1`, `req_2`, `x'`, `α`, `Müller`).
IDENTIFIER_PATTERN = r"[^\W\d][\w.']*"


def custom_pipeline_entry() -> dict[str, Any]:
    """The ``config.custom_pipelines`` entry pointing at this file's pipeline class."""
    return {
        "impl": f"{__name__.split('.')[-1]}.SymbolicGenerationPipeline",
        "pt": ("AutoModelForSeq2SeqLM",),
        "type": "text",
    }


class SymbolicGenerationPipeline(Pipeline):
    """Generate an answer (trace, assignment, copy) for each input string.

    Symbols: with ``symbols=`` (a regex or a list of names) those names are the symbols; otherwise a
    whitespace-separated input treats every identifier that is not a base token as a symbol
    (``"& req_ack X grant"``), and an unsegmented input uses the tokenizer's own rule (``"&aXb"``).
    Returns, per input, a list of ``{"generated_text": ...}`` in the caller's symbol names.
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if hasattr(self.tokenizer, "check_matches"):
            self.tokenizer.check_matches(self.model.config)
        self._tokenizers: dict[SymbolRule, Any] = {}

    def _sanitize_parameters(self, symbols: Any = None, **generate_kwargs: Any):
        preprocess = {"symbols": symbols} if symbols is not None else {}
        return preprocess, generate_kwargs, {}

    def _tokenizer_for(self, text: str, symbols: Any) -> Any:
        if symbols is None and not any(ch.isspace() for ch in text.strip()):
            return self.tokenizer
        if symbols is None:
            rule = SymbolRule(pattern=IDENTIFIER_PATTERN)
        elif type(symbols).__name__ == "SymbolRule":  # this file's class or the package's copy
            rule = SymbolRule.from_dict(symbols.to_dict())
        elif isinstance(symbols, str):
            rule = SymbolRule(pattern=symbols)
        else:
            rule = SymbolRule(names=list(symbols))
        if rule not in self._tokenizers:
            base = self.tokenizer
            # Pass the rule as a dict: remote-code loading may give the tokenizer its own SymbolRule class.
            self._tokenizers[rule] = type(base)(
                vocabulary=base.task_vocabulary.name, symbol_rule=rule.to_dict(), max_symbols=base.max_symbols
            )
        return self._tokenizers[rule]

    def preprocess(self, inputs: str, symbols: Any = None) -> dict[str, Any]:
        if not isinstance(inputs, str):
            raise TypeError(f"{PIPELINE_TASK} takes strings, got {type(inputs).__name__}")
        tokenizer = self._tokenizer_for(inputs, symbols)
        encoded = tokenizer(inputs, return_tensors="pt", return_symbol_names=True)
        names = encoded.pop("symbol_names")
        return {"model_inputs": dict(encoded), "symbol_names": names, "tokenizer": tokenizer}

    def _forward(self, model_inputs: dict[str, Any], **generate_kwargs: Any) -> dict[str, Any]:
        inputs = model_inputs["model_inputs"]
        generate_kwargs.setdefault("max_new_tokens", 128)
        threads = torch.get_num_threads()
        # One input of a small model on a CPU: more threads gain nothing and, beside other work, spin against it
        # (one answer of a 2M-parameter model: 37 ms on one thread, 2.6 s on two, beside two busy processes).
        # OMP_NUM_THREADS, where set, is the user's choice and stays.
        single = (
            self.model.device.type == "cpu"
            and "OMP_NUM_THREADS" not in os.environ
            and sum(p.numel() for p in self.model.parameters()) <= SMALL_MODEL_PARAMETERS
        )
        if single:
            torch.set_num_threads(1)
        try:
            output_ids = self.model.generate(**inputs, **generate_kwargs)
        finally:
            torch.set_num_threads(threads)
        return {
            "output_ids": output_ids,
            "symbol_names": model_inputs["symbol_names"],
            "tokenizer": model_inputs["tokenizer"],
        }

    def postprocess(self, model_outputs: dict[str, Any]) -> list[dict[str, str]]:
        tokenizer = model_outputs["tokenizer"]
        names = model_outputs["symbol_names"]
        return [
            {"generated_text": tokenizer.decode(row, skip_special_tokens=True, symbol_names=names)}
            for row in model_outputs["output_ids"].tolist()
        ]


def register_pipeline() -> None:
    from transformers import AutoModelForSeq2SeqLM
    from transformers.pipelines import PIPELINE_REGISTRY

    if PIPELINE_TASK not in PIPELINE_REGISTRY.get_supported_tasks():
        PIPELINE_REGISTRY.register_pipeline(
            PIPELINE_TASK, pipeline_class=SymbolicGenerationPipeline, pt_model=AutoModelForSeq2SeqLM, type="text"
        )
