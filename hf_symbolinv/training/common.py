"""What every route's training shares: the reference recipe and its warm-up, the graceful stop (a time limit or
SIGTERM), the stop on a loss or weight that is no longer finite, and the compiled training step (where a run resumes:
``checkpoints.py``)."""

from __future__ import annotations

import math
import signal
import threading
import time
from typing import Any

from transformers import TrainerCallback

#: The training recipe of the reference implementation, in ``TrainingArguments`` terms: AdamW (lr 1e-3,
#: betas (0.9, 0.95), weight decay 0.1), a cosine schedule with 5% warm-up, gradient clipping at 1.0. Every
#: training entry point (``symbolinv train``, the demo, the Accelerate example, the benchmarks) takes it
#: from here.
RECIPE: dict[str, Any] = {
    "learning_rate": 1e-3,
    "adam_beta1": 0.9,
    "adam_beta2": 0.95,
    "weight_decay": 0.1,
    "lr_scheduler_type": "cosine",
    "warmup_steps": 0.05,  # a fraction of max_steps
    "max_grad_norm": 1.0,
}


#: ``symbolinv train``'s warm-up for the seq2seq families: the reference code's 1,000 steps (a run shorter than 5,000
#: steps warms up over its first fifth), the recipe the shipped ``*-small`` models were trained with. The tree family
#: keeps :data:`RECIPE`'s 5%.
REFERENCE_WARMUP_STEPS = 1000


def default_warmup_steps(max_steps: int) -> int:
    """The warm-up of a ``max_steps`` run of ``symbolinv train``: :data:`REFERENCE_WARMUP_STEPS`, or a fifth of a
    shorter run."""
    return max(1, min(REFERENCE_WARMUP_STEPS, max_steps // 5))


def recipe_arguments(**overrides: Any) -> dict[str, Any]:
    """``TrainingArguments`` keyword arguments of the recipe, with ``overrides`` (e.g. ``learning_rate``)."""
    unknown = sorted(set(overrides) - set(RECIPE))
    if unknown:
        raise ValueError(f"not a field of the training recipe: {', '.join(unknown)} (fields: {', '.join(RECIPE)})")
    return {**RECIPE, **{key: value for key, value in overrides.items() if value is not None}}


class GracefulStop(TrainerCallback):
    """Stops training at the end of a step and saves a checkpoint there, so that the same command resumes it: after
    ``seconds`` of wall-clock time (``--time-limit``; None: no limit), or once the process is sent SIGTERM (what a
    batch scheduler, a lent machine or ``kill`` sends before stopping a job), which would otherwise lose every step
    since the last save. A second SIGTERM stops the process at once. The handler is installed for the training only,
    from the main thread (a signal handler cannot be set from another), and the previous one restored after it."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.stopped_at: int | None = None
        self.reason: str | None = None  # what stopped the run: "the time limit (N min)" or "SIGTERM"
        self.requested = False
        self._previous: Any = None
        self._installed = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.start = time.monotonic()
        if not self._installed and threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, self._request)
            # None: a handler set outside Python, which cannot be put back; the default is the nearest.
            self._previous = signal.SIG_DFL if previous is None else previous
            self._installed = True

    def _request(self, signum: int, frame: Any) -> None:
        if self.requested:  # asked twice: the previous handler (by default, the process ends)
            self.release()
            signal.raise_signal(signum)
            return
        self.requested = True

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step >= state.max_steps:
            return
        if self.requested:
            self.reason = "SIGTERM"
        elif self.seconds is not None and time.monotonic() - self.start >= self.seconds:
            self.reason = f"the time limit ({self.seconds / 60:g} min)"
        else:
            return
        control.should_training_stop = True
        control.should_save = True
        self.stopped_at = state.global_step

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.release()

    def release(self) -> None:
        """Put back the SIGTERM handler found when training began (also when training ended by an exception)."""
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous)
            self._installed = False


class TrainingDiverged(ValueError):
    """The loss, the gradient norm or a weight became NaN or infinite: the run stops and saves no model."""


class StopOnNonFinite(TrainerCallback):
    """Stops a run at the first logged step whose loss or gradient norm is NaN or infinite, or whose weights are
    (checked at every log: the Trainer's own logging replaces a NaN loss by the window's mean). Raising leaves the
    Trainer before it saves a model; the checkpoints saved so far stay for diagnosis."""

    def __init__(self, checkpoints: str | None = None) -> None:
        self.checkpoints = checkpoints

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        logs = logs or {}
        bad = [f"{key} {logs[key]}" for key in ("loss", "grad_norm") if key in logs and not math.isfinite(logs[key])]
        model = kwargs.get("model")
        if not bad and model is not None:
            weights = model.named_parameters()
            bad = [f"weight {name}" for name, value in weights if not bool(value.detach().isfinite().all())][:1]
        if bad:
            kept = f"; the checkpoints in {self.checkpoints} are kept for diagnosis" if self.checkpoints else ""
            raise TrainingDiverged(
                f"training diverged at step {state.global_step} ({', '.join(bad)} is not finite): no model was "
                f"saved{kept}; try a lower --lr"
            )


#: Positions of a compiled run's batches are padded to a multiple of this (inputs and targets alike), so that the
#: shapes fall into few buckets and each bucket compiles once.
COMPILE_BUCKET = 8
#: Graphs one compiled forward may keep (torch's default, 8, is fewer than the buckets of a real dataset: past it
#: torch would run new buckets uncompiled, silently).
COMPILE_GRAPH_LIMIT = 256


class CompiledTrainingMixin:
    """A ``Trainer`` whose training step runs the model compiled whole (``torch.compile(fullgraph=True,
    dynamic=False)``: no graph break, one graph per shape bucket), while evaluation and generation run it eagerly
    (their shapes change every decoding step). The number of graphs built is logged as ``compiled_graphs``.

    One process only: a compiled copy would bypass the gradient synchronisation of a distributed wrapper."""

    compiled_model: Any = None  # None: the training step runs eagerly
    compiled_graphs: int = 0

    def setup_compiled_training(self, backend: str | None) -> None:
        """``backend``: torch.compile's (``inductor``; ``aot_eager`` traces the same graphs without generating
        code); None trains eagerly."""
        if backend is None:
            return
        import torch
        import torch._dynamo

        if self.args.world_size > 1:
            raise ValueError("--compile trains in one process; for several, use Accelerate's dynamo settings")
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, COMPILE_GRAPH_LIMIT)
        if backend not in torch._dynamo.list_backends(exclude_tags=()):
            known = ", ".join(torch._dynamo.list_backends())
            raise ValueError(f"--compile {backend}: not a torch.compile backend ({known})")
        compile_graph = torch._dynamo.lookup_backend(backend)

        def counting(graph: Any, example_inputs: Any) -> Any:  # every graph built for this model: one per bucket
            self.compiled_graphs += 1
            return compile_graph(graph, example_inputs)

        self.compiled_model = torch.compile(self.model, backend=counting, fullgraph=True, dynamic=False)

    def compute_loss(self, model: Any, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if self.compiled_model is not None and model.training:
            model = self.compiled_model
        return super().compute_loss(model, inputs, *args, **kwargs)

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if self.compiled_model is not None:
            logs = {**logs, "compiled_graphs": self.compiled_graphs}
        super().log(logs, *args, **kwargs)
