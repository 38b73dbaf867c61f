"""Configuration of the (Terminating) Differentiable Tree Experts and of the Differentiable Tree Machine."""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Literal

from transformers import PreTrainedConfig

from .config_fields import architecture, architecture_fields, check_config_dict, check_fields

Controller = Literal["dtm", "dte"]
Termination = Literal["oracle", "sluggish"]
CONTROLLERS = typing.get_args(Controller)
TERMINATIONS = typing.get_args(Termination)
TreeEncoderInit = Literal["zero", "normal"]

_SMALL: dict[str, Any] = dict(d_model=64, num_heads=4, ffn_dim=128, filler_dim=32, num_steps=8, num_experts=8, top_k=8)
_PAPER: dict[str, Any] = dict(
    d_model=256, num_heads=8, ffn_dim=1024, filler_dim=64, num_steps=56, num_experts=16, top_k=16
)

#: Named settings: the paper's width (256, 16 experts, 56 steps as in its Table 4) and a CPU-sized one of each
#: model (64 wide, 8 experts, 8 steps; the sparse one runs 2 of the 8, the paper's 4 of 16 in proportion).
PRESETS: dict[str, dict[str, Any]] = {
    "dtm-small": dict(_SMALL, controller="dtm"),
    "dte-small": dict(_SMALL, controller="dte"),
    "dte-sparse-small": dict(_SMALL, controller="dte", top_k=2),
    "tdte-small": dict(_SMALL, controller="dte", termination="sluggish", num_steps=12),
    "dtm-paper": dict(_PAPER, controller="dtm"),
    "dte-paper": dict(_PAPER, controller="dte"),
    "dte-sparse-paper": dict(_PAPER, controller="dte", top_k=4),
    "tdte-paper": dict(_PAPER, controller="dte", termination="sluggish"),
}


#: The deepest node a DTE tree may have: trees are a TPR of 2**(max_depth+1)-1 roles, and past depth 12 one tree
#: is already 8k roles wide.
MAX_TREE_DEPTH = 12


class DTEConfig(PreTrainedConfig):
    r"""Configuration of a Differentiable Tree Machine (``controller="dtm"``: one transformer encoder layer
    per step) or of Differentiable Tree Experts (``controller="dte"``: one mixture of experts shared by
    every step).

    Args:
        vocab_size: node labels the model knows: the empty position (id 0), the shared symbol label (id 1)
            and the base labels.
        max_symbols: distinct symbols one tree may hold. Symbols never get fillers of their own: each
            carries a one-hot of its first-appearance index in a channel the controller does not see.
        max_depth: deepest node depth a tree may have (the root is depth 0).
        num_steps: interpreter steps (the most steps, for the sluggish termination).
        filler_dim: width of a filler vector.
        d_model, num_heads, ffn_dim, dropout: the controller's transformer layers.
        tree_encoder_init: how a new model's tree encoder (a tree's positions to the controller's token) starts:
            ``normal``, small random weights like every other linear map; ``zero``, so that a position no training
            tree fills gets no gradient and is never read. On the papers' active <-> logical trees ``zero`` did not
            help the structural split (41-45% against 57%, two seeds against one): ``normal`` stays the default.
        mse_weight: weight of a squared-error term beside the cross-entropy, after the DTM authors' loss (their only
            one): at every answer position the squared distance of the tree's content from its label's filler (in
            units of the fillers' mean squared norm, so that shrinking every filler does not pay) and of its symbol
            channel, as it is, from its symbol's one-hot (zero where the answer holds none). A blend of two trees,
            or a word that arrives only as a trace of a blended step, pays it; the cross-entropy, whose scale is
            learned and whose pointer normalises the symbol channel, barely does. 0 (the default): the
            cross-entropy alone.
        controller_depth: the deepest level of a tree (the root is 0) that the controller reads; deeper nodes are
            moved by the operations like any others but never read, so that the choice of a step cannot depend on
            them. ``None`` (the default): every level. A program that moves subtrees whole needs only a tree's top
            levels, and what a longer input adds below them (more adjectives in a noun phrase) cannot change it.
        hardness: how far a step's operation and arguments are chosen rather than blended. 0 (the papers'): the
            softmax weights as they are, every step a weighted sum of car, cdr and cons over weighted sums of trees.
            1: each step applies the one operation and the one tree (per argument) of highest weight, as a program
            does, and the gradients are the softmax's (the straight-through estimator). Between: the weights moved
            that far toward the choice, the gradients still the softmax's. A blended step leaks traces of the trees
            it was not meant to read, and a model can learn to answer with them; a chosen step cannot.
        num_experts: experts of the DTE mixture; ``top_k`` of them are used per step (``top_k ==
            num_experts`` is the dense mixture).
        termination: ``oracle`` (run exactly ``num_steps``) or ``sluggish`` (the Terminating DTE's
            damper and explorer predictors).
        confidence_threshold: the sluggish rule's confidence needed to stop (0.8 in the paper).
        index_penalty: the per-index penalty of the sluggish choice (0.9 in the paper).
        termination_scale: the factor on the termination predictors' parameters (large, so that one number
            per step learns fast).
        residual_loss_weight: the weight of the losses at the other steps the sluggish rule looks at.
        vocabulary: the task vocabulary the model was trained for (``tree``, ``nnf``), recorded so that
            evaluation knows how to judge its answers; not part of the architecture.
    """

    model_type = "dte"
    attribute_map: ClassVar[dict[str, str]] = {"hidden_size": "d_model", "num_attention_heads": "num_heads"}

    # Architecture fields: recorded with the weights, compared on loading.
    vocab_size: int = architecture(64)
    max_symbols: int = architecture(32)
    controller: Controller = architecture("dte")
    termination: Termination = architecture("oracle")
    max_depth: int = architecture(6)
    num_steps: int = architecture(14)
    filler_dim: int = architecture(64)
    d_model: int = architecture(256)
    num_heads: int = architecture(8)
    ffn_dim: int = architecture(1024)
    num_experts: int = architecture(16)
    top_k: int = architecture(16)
    dropout: float = 0.0
    tree_encoder_init: TreeEncoderInit = "normal"
    hardness: float = architecture(0.0)
    controller_depth: int | None = architecture(None)
    mse_weight: float = 0.0
    confidence_threshold: float = 0.8
    index_penalty: float = 0.9
    termination_scale: float = 100.0
    residual_loss_weight: float = 0.1
    vocabulary: str | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        check_fields(self, kwargs.get("dtype"))
        super().__post_init__(**kwargs)
        self.validate_combinations()

    @property
    def architecture_fields(self) -> tuple[str, ...]:
        """The fields ``save_pretrained`` records with the weights and loading compares (see ``loading.py``)."""
        return architecture_fields(type(self))

    def validate_combinations(self) -> None:
        """Raise ``ValueError`` naming the field for values no network has (each field's type and allowed values
        are checked from its declaration, by ``check_fields``)."""

        def fail(field: str, message: str) -> None:
            raise ValueError(f"DTEConfig.{field}: {message}")

        if self.vocab_size < 3:
            fail("vocab_size", f"must be >= 3 (empty, symbol and at least one base label), got {self.vocab_size}")
        for field in (
            "max_symbols",
            "max_depth",
            "num_steps",
            "filler_dim",
            "d_model",
            "num_heads",
            "ffn_dim",
            "num_experts",
        ):
            if getattr(self, field) < 1:
                fail(field, f"must be >= 1, got {getattr(self, field)}")
        if self.d_model % self.num_heads:
            fail("num_heads", f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}")
        if not 1 <= self.top_k <= self.num_experts:
            fail("top_k", f"must be between 1 and num_experts={self.num_experts}, got {self.top_k}")
        if not 0.0 <= self.dropout < 1.0:
            fail("dropout", f"must be in [0, 1), got {self.dropout}")
        if self.controller_depth is not None and not 0 <= self.controller_depth <= self.max_depth:
            bounds = f"between 0 and max_depth={self.max_depth}"
            fail("controller_depth", f"must be None or {bounds}, got {self.controller_depth}")
        if not 0.0 <= self.hardness <= 1.0:
            fail("hardness", f"must be in [0, 1], got {self.hardness}")
        if self.mse_weight < 0:
            fail("mse_weight", f"must be >= 0, got {self.mse_weight}")
        if not 0.0 < self.confidence_threshold <= 1.0:
            fail("confidence_threshold", f"must be in (0, 1], got {self.confidence_threshold}")
        if not 0.0 < self.index_penalty <= 1.0:
            fail("index_penalty", f"must be in (0, 1], got {self.index_penalty}")
        if self.termination_scale <= 0:
            fail("termination_scale", f"must be > 0, got {self.termination_scale}")
        if self.residual_loss_weight < 0:
            fail("residual_loss_weight", f"must be >= 0, got {self.residual_loss_weight}")
        if self.max_depth > MAX_TREE_DEPTH:
            fail(
                "max_depth",
                f"must be <= {MAX_TREE_DEPTH} (a tree has 2**(max_depth+1)-1 positions), got {self.max_depth}",
            )

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> DTEConfig:
        """A preset by name (:data:`PRESETS`), with ``overrides`` (config fields)."""
        if name not in PRESETS:
            raise ValueError(f"DTEConfig.from_preset: unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        """``PreTrainedConfig.from_dict``, refusing fields no DTEConfig has (a typo is not silently stored)."""
        check_config_dict(cls, config_dict, kwargs)
        return super().from_dict(config_dict, **kwargs)
