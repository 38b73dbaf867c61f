"""The ``tree-transduction`` pipeline: trees (bracketed strings, or formulas for a Polish-notation tokenizer)
in, answer trees in the same names out.

A folder saved by ``DTEForTreeTransduction.save_pretrained`` records the pipeline in
``config.custom_pipelines``, so ``pipeline("tree-transduction", model=folder, trust_remote_code=True)`` works
where this package is not installed. The tree tokenizer is read from the model's folder (``dte_tokenizer.json``)
unless one is passed as ``tree_tokenizer=``.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import Pipeline

from .tokenization_dte import DTETreeTokenizer

PIPELINE_TASK = "tree-transduction"


def custom_pipeline_entry() -> dict[str, Any]:
    """The ``config.custom_pipelines`` entry pointing at this file's pipeline class."""
    return {"impl": f"{__name__.split('.')[-1]}.TreeTransductionPipeline", "pt": ("AutoModel",), "type": "text"}


class TreeTransductionPipeline(Pipeline):
    """Answer each input tree with the model's output tree: ``[{"generated_text": "(NP the dog)"}]`` per input.

    ``num_steps=`` overrides the number of interpreter steps (an oracle count, e.g. for longer inputs)."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = False

    def __init__(self, *args: Any, tree_tokenizer: DTETreeTokenizer | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if tree_tokenizer is None:
            source = self.model.config._name_or_path
            if not source:
                raise ValueError(
                    "tree-transduction: the model has no folder to read its tokenizer from; pass tree_tokenizer="
                )
            tree_tokenizer = DTETreeTokenizer.from_pretrained(source)
        tree_tokenizer.check_model_config(self.model.config)
        self.tree_tokenizer = tree_tokenizer

    def _sanitize_parameters(self, num_steps: int | None = None, **kwargs: Any):
        if kwargs:
            raise TypeError(f"tree-transduction: unknown argument(s) {sorted(kwargs)}")
        return {}, ({"num_steps": num_steps} if num_steps is not None else {}), {}

    def preprocess(self, inputs: str) -> dict[str, Any]:
        if not isinstance(inputs, str):
            raise TypeError(f"{PIPELINE_TASK} takes strings, got {type(inputs).__name__}")
        encoded = self.tree_tokenizer(inputs)
        names = encoded.pop("symbol_names")
        return {"model_inputs": encoded, "symbol_names": names}

    def _forward(self, model_inputs: dict[str, Any], num_steps: int | None = None) -> dict[str, Any]:
        inputs = {key: value.to(self.model.device) for key, value in model_inputs["model_inputs"].items()}
        outputs = self.model(**inputs, num_steps=num_steps)
        return {
            "label_logits": outputs.label_logits,
            "symbol_probs": outputs.symbol_probs,
            "symbol_names": model_inputs["symbol_names"],
        }

    def postprocess(self, model_outputs: dict[str, Any]) -> list[dict[str, str]]:
        answers = self.tree_tokenizer.batch_decode(
            model_outputs["label_logits"].to(torch.float32),
            model_outputs["symbol_probs"].to(torch.float32),
            model_outputs["symbol_names"],
        )
        return [{"generated_text": answer} for answer in answers]


def register_pipeline() -> None:
    from transformers import AutoModel
    from transformers.pipelines import PIPELINE_REGISTRY

    if PIPELINE_TASK not in PIPELINE_REGISTRY.get_supported_tasks():
        PIPELINE_REGISTRY.register_pipeline(
            PIPELINE_TASK, pipeline_class=TreeTransductionPipeline, pt_model=AutoModel, type="text"
        )
