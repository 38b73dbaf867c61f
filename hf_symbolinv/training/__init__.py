"""Training with the Hugging Face Trainer, by route: ``seq2seq.py`` (tokenised datasets, the collator, semantic
metrics, the ``Seq2SeqTrainer`` with batches grouped by streams and length), ``tree.py`` (trees in, trees out, the
plain ``Trainer``), ``common.py`` (the recipe, the graceful stop, the stop on non-finite values) and ``checkpoints.py``
(checkpoints verified, recorded with the run's options, resumed, rotated and set aside without losing a user's file)."""

from .checkpoints import (
    CheckpointsProblem,
    CheckpointWriteError,
    prepare_checkpoints,
    resume_point,
    training_lock,
    verify_checkpoint,
)
from .common import (
    RECIPE,
    REFERENCE_WARMUP_STEPS,
    GracefulStop,
    StopOnNonFinite,
    TrainingDiverged,
    default_warmup_steps,
    recipe_arguments,
)
from .seq2seq import (
    MODEL_COLUMNS,
    CommutedTrainSet,
    SymbolInvDataCollator,
    SymbolInvTrainer,
    grouping_key,
    semantic_metrics,
    tokenize_dataset,
)

__all__ = [
    "CheckpointWriteError",
    "CheckpointsProblem",
    "CommutedTrainSet",
    "GracefulStop",
    "MODEL_COLUMNS",
    "RECIPE",
    "REFERENCE_WARMUP_STEPS",
    "StopOnNonFinite",
    "SymbolInvDataCollator",
    "SymbolInvTrainer",
    "TrainingDiverged",
    "default_warmup_steps",
    "grouping_key",
    "prepare_checkpoints",
    "recipe_arguments",
    "resume_point",
    "semantic_metrics",
    "tokenize_dataset",
    "training_lock",
    "verify_checkpoint",
]
