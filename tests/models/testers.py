"""Model-agnostic properties, written once and run by every model family's tests.

A family's test module subclasses the mixins and provides a few factories:

* ``ModelTesterMixin``: ``make_model()`` (a tiny model in eval mode), ``make_inputs(model)`` (forward
  keyword arguments for a small batch, no labels), ``make_tokenizer()`` (saved with the model, or
  None), ``auto_class_name`` (the Auto class that loads the saved folder, e.g. ``"AutoModelForSeq2SeqLM"``)
  and ``expected_saved_files`` (the exact file list of a saved folder: only the family's own files).
  Tests: save/load round trip through the Auto class, the saved file list, loading with
  ``trust_remote_code=True`` in a process where the package cannot be imported, ``return_dict=False``,
  eager and sdpa attention agreeing, and gradient checkpointing giving the same gradients.
* ``GenerationTesterMixin``: ``make_generation_inputs(model)``; tests that the key-value cache changes
  no greedy or beam-search output and that ``generate`` hands it to every forward, which uses it.
* ``StrictLoadingTesterMixin`` (the same factories): every config.json field mutated
  loads to identical logits or fails naming the field; NaN weights, another architecture's weights and a
  truncated weights file are refused by name.
* ``CompileTesterMixin``: ``make_bucket_batches(model)`` (two training batches with labels of one shape
  bucket, different in content, and one batch of another bucket) and ``training_loss(model, inputs)``;
  tests that ``torch.compile(fullgraph=True)`` traces the training forward and backward without a graph break,
  with the loss and gradients of eager mode, and that a second batch of a seen bucket does not recompile.
* ``RenamingInvarianceTesterMixin``: ``rename_inputs(inputs, permutation)``, ``permute_logits(logits,
  permutation)`` and ``symbol_permutation(model, seed)``; tests that renaming the input's symbols
  permutes the logits' symbol columns and renames greedy and beam-search outputs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest
import torch

from hf_symbolinv.models.symbolinv.cache_names import CACHE_NAME, output_cache

#: (name, generate keyword arguments) of the decoding modes every generation property is checked with.
GENERATION_MODES = (
    ("greedy", {}),
    ("beam", {"num_beams": 3}),
    ("beam-returning-2", {"num_beams": 3, "num_return_sequences": 2}),
)


def output_logits(outputs: Any) -> torch.Tensor:
    return outputs.logits if hasattr(outputs, "logits") else outputs[0]


class ModelFactories:
    """What a family's test class provides (see the module docstring), and the helpers built on it."""

    auto_class_name: str = "AutoModel"

    def make_model(self) -> Any:
        raise NotImplementedError

    def make_inputs(self, model: Any) -> dict[str, Any]:
        raise NotImplementedError

    def make_tokenizer(self) -> Any:
        return None

    def save(self, model: Any, folder: os.PathLike) -> None:
        model.save_pretrained(folder)
        tokenizer = self.make_tokenizer()
        if tokenizer is not None:
            tokenizer.save_pretrained(folder)

    def auto_class(self) -> Any:
        import transformers

        return getattr(transformers, self.auto_class_name)

    @torch.no_grad()
    def logits(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        return output_logits(model(**inputs))


class ModelTesterMixin(ModelFactories):
    expected_saved_files: frozenset[str] = frozenset()
    #: Tolerance of "the same logits" between two code paths computing the same function.
    atol: float = 1e-5

    # -- properties ---------------------------------------------------------------------------------
    def test_save_load_round_trip(self, tmp_path) -> None:
        model = self.make_model()
        inputs = self.make_inputs(model)
        self.save(model, tmp_path)
        loaded = self.auto_class().from_pretrained(tmp_path).eval()
        assert type(loaded) is type(model)
        assert torch.equal(self.logits(loaded, inputs), self.logits(model, inputs))

    def test_saved_folder_holds_only_the_familys_files(self, tmp_path) -> None:
        self.save(self.make_model(), tmp_path)
        assert set(os.listdir(tmp_path)) == set(self.expected_saved_files)

    @pytest.mark.slow
    def test_loads_where_the_package_cannot_be_imported(self, tmp_path) -> None:
        model = self.make_model()
        inputs = self.make_inputs(model)
        folder = tmp_path / "checkpoint"
        self.save(model, folder)
        torch.save({"inputs": inputs, "logits": self.logits(model, inputs)}, tmp_path / "reference.pt")
        script = textwrap.dedent(f"""
            import sys
            sys.modules["hf_symbolinv"] = None  # as where the package is not installed
            try:
                import hf_symbolinv
                raise SystemExit("hf_symbolinv must not be importable here")
            except ImportError:
                pass
            import torch, transformers
            reference = torch.load({str(tmp_path / "reference.pt")!r})
            auto = getattr(transformers, {self.auto_class_name!r})
            model = auto.from_pretrained({str(folder)!r}, trust_remote_code=True).eval()
            assert not type(model).__module__.startswith("hf_symbolinv"), type(model).__module__
            with torch.no_grad():
                out = model(**reference["inputs"])
            logits = out.logits if hasattr(out, "logits") else out[0]
            print("MAXDIFF", float((logits - reference["logits"]).abs().nan_to_num(0.0).max()))
            print("SCALE", float(reference["logits"].abs().nan_to_num(0.0, posinf=0.0, neginf=0.0).max()))
            print("INF", bool(torch.equal(torch.isinf(logits), torch.isinf(reference["logits"]))))
        """)
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        printed = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
        # Another process may pick other kernels or thread splits: equal up to float rounding, not bit for bit.
        assert float(printed["MAXDIFF"]) <= 1e-5 * max(1.0, float(printed["SCALE"])), done.stdout
        assert printed["INF"] == "True", done.stdout

    def test_return_dict_false_gives_a_tuple(self) -> None:
        model = self.make_model()
        inputs = self.make_inputs(model)
        with torch.no_grad():
            as_tuple = model(**inputs, return_dict=False)
            as_output = model(**inputs)
        assert isinstance(as_tuple, tuple)
        assert torch.equal(as_tuple[0], output_logits(as_output))

    def test_eager_and_sdpa_attention_agree(self) -> None:
        model = self.make_model()
        if not getattr(model, "_supports_sdpa", False):
            return
        inputs = self.make_inputs(model)
        model.set_attn_implementation("eager")
        eager = self.logits(model, inputs)
        model.set_attn_implementation("sdpa")
        sdpa = self.logits(model, inputs)
        finite = torch.isfinite(eager)
        assert torch.equal(finite, torch.isfinite(sdpa))
        torch.testing.assert_close(sdpa[finite], eager[finite], atol=self.atol, rtol=self.atol)

    def loss_for_gradients(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """A scalar depending on every output: the family may override with its own loss."""
        logits = output_logits(model(**inputs))
        return logits.masked_fill(~torch.isfinite(logits), 0.0).square().mean()

    def test_gradient_checkpointing_gives_the_same_gradients(self) -> None:
        model = self.make_model()
        if not model.supports_gradient_checkpointing:
            return
        inputs = self.make_inputs(model)
        model.train()  # checkpointing is active in training mode; the tiny configs have no dropout

        def gradients() -> dict[str, torch.Tensor]:
            model.zero_grad()
            self.loss_for_gradients(model, inputs).backward()
            return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

        plain = gradients()
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        assert model.is_activation_checkpointing
        checkpointed = gradients()
        model.activation_checkpointing_disable()
        assert plain.keys() == checkpointed.keys() and plain
        for name, grad in plain.items():
            torch.testing.assert_close(checkpointed[name], grad, atol=self.atol, rtol=self.atol, msg=name)


class CompileTesterMixin(ModelFactories):
    """``torch.compile(model, fullgraph=True, dynamic=False)``: one graph per shape bucket, nothing left to eager.

    Tracing time grows with the layers and steps unrolled, and every layer or step runs the same code: the SIT and
    FOLNet testers build one encoder and one decoder layer, the tree models' two steps."""

    #: Dynamo and AOTAutograd trace the forward and the backward graph (where a graph break or a data-dependent
    #: shape would show); inductor's code generation is torch's own, run by one slow test of the SIT.
    compile_backend: str = "aot_eager"
    compile_atol: float = 1e-5

    def make_bucket_batches(self, model: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        raise NotImplementedError

    def training_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        return model(**inputs).loss

    def loss_and_gradients(self, model: Any, inputs: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        model.zero_grad()
        torch.manual_seed(0)  # the same draws for models that sample in training (alpha-renaming, dropout)
        loss = self.training_loss(model, inputs)
        loss.backward()
        gradients = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        assert torch.isfinite(loss) and gradients and all(torch.isfinite(grad).all() for grad in gradients.values())
        return loss.detach(), gradients

    def assert_same_step(self, compiled: tuple[torch.Tensor, dict], eager: tuple[torch.Tensor, dict]) -> None:
        """The compiled graph's loss and gradients are eager mode's (up to the order of float additions)."""
        (compiled_loss, compiled_grads), (eager_loss, eager_grads) = compiled, eager
        torch.testing.assert_close(compiled_loss, eager_loss, atol=self.compile_atol, rtol=self.compile_atol)
        assert compiled_grads.keys() == eager_grads.keys()
        for name, grad in eager_grads.items():
            torch.testing.assert_close(
                compiled_grads[name], grad, atol=self.compile_atol, rtol=self.compile_atol, msg=name
            )

    def test_compiled_training_matches_eager_with_one_graph_per_bucket(self) -> None:
        """The compiled step gives eager mode's (finite) loss and gradients on two buckets; a second batch of the
        first bucket's shapes reuses its graph. One test, so that each bucket is traced once (tracing is the cost of
        these tests)."""
        import torch._dynamo
        from torch._dynamo.testing import CompileCounterWithBackend

        torch._dynamo.reset()
        model = self.make_model().train()
        first, same_bucket, other_bucket = self.make_bucket_batches(model)
        shapes = {name: tuple(value.shape) for name, value in first.items() if torch.is_tensor(value)}
        assert shapes == {name: tuple(value.shape) for name, value in same_bucket.items() if torch.is_tensor(value)}
        assert not all(torch.equal(first[name], same_bucket[name]) for name in shapes), "the two batches are equal"
        eager_first, eager_other = self.loss_and_gradients(model, first), self.loss_and_gradients(model, other_bucket)
        counter = CompileCounterWithBackend(self.compile_backend)
        model.compile(fullgraph=True, dynamic=False, backend=counter)
        self.assert_same_step(self.loss_and_gradients(model, first), eager_first)
        assert counter.frame_count == 1
        self.training_loss(model, same_bucket).backward()
        assert counter.frame_count == 1, "a second batch of the same bucket recompiled"
        self.assert_same_step(self.loss_and_gradients(model, other_bucket), eager_other)
        assert counter.frame_count == 2


class GenerationTesterMixin:
    max_new_tokens: int = 10

    def make_generation_inputs(self, model: Any) -> dict[str, Any]:
        raise NotImplementedError

    def test_cache_changes_no_generated_output(self) -> None:
        # Cached and uncached decoding add the same numbers in another order: float64, so that no near-tie of two
        # logits can fall differently on another CPU (see test_generation_is_renamed_with_the_input).
        model = self.make_model().double()
        inputs = self.make_generation_inputs(model)
        for name, kwargs in GENERATION_MODES:
            cached = model.generate(**inputs, max_new_tokens=self.max_new_tokens, use_cache=True, **kwargs)
            uncached = model.generate(**inputs, max_new_tokens=self.max_new_tokens, use_cache=False, **kwargs)
            assert torch.equal(cached, uncached), name

    def test_generate_hands_its_cache_to_every_forward(self) -> None:
        """Every forward of ``generate`` gets the cache under the name the installed transformers uses and returns
        that very cache. A forward that misses it (``past_key_values`` became ``cache`` in transformers 5.24) builds
        a fresh one and silently decodes from the last token only, which a tiny model may not show in its outputs."""
        model = self.make_model()
        inputs = self.make_generation_inputs(model)
        steps: list[tuple[Any, Any]] = []

        def record(module: Any, args: tuple, kwargs: dict[str, Any], output: Any) -> None:
            steps.append((kwargs.get(CACHE_NAME), output_cache(output)))

        handle = model.register_forward_hook(record, with_kwargs=True)
        try:
            model.generate(**inputs, max_new_tokens=self.max_new_tokens, use_cache=True)
        finally:
            handle.remove()
        assert len(steps) > 1
        for step, (given, returned) in enumerate(steps):
            assert given is not None and returned is given, step


class RenamingInvarianceTesterMixin:
    """Renaming a sample's symbols renames the model's answer: logits permute, generations are renamed."""

    def symbol_permutation(self, model: Any, seed: int) -> Any:
        raise NotImplementedError

    def rename_inputs(self, inputs: dict[str, Any], permutation: Any) -> dict[str, Any]:
        raise NotImplementedError

    def permute_logits(self, logits: torch.Tensor, permutation: Any) -> torch.Tensor:
        raise NotImplementedError

    def rename_outputs(self, sequences: torch.Tensor, permutation: Any) -> torch.Tensor:
        return self.rename_inputs({"input_ids": sequences}, permutation)["input_ids"]

    def emits_symbols(self, sequences: torch.Tensor, model: Any) -> bool:
        """Whether generated sequences contain symbols (so that a renaming test is not vacuous)."""
        return True

    def test_logits_permute_under_renaming(self) -> None:
        model = self.make_model()
        inputs = self.make_inputs(model)
        for seed in range(3):
            permutation = self.symbol_permutation(model, seed)
            with torch.no_grad():
                original = output_logits(model(**inputs))
                renamed = output_logits(model(**self.rename_inputs(inputs, permutation)))
            expected = self.permute_logits(original, permutation)
            assert torch.equal(torch.isinf(renamed), torch.isinf(expected))
            finite = torch.isfinite(expected)
            torch.testing.assert_close(renamed[finite], expected[finite], atol=1e-5, rtol=1e-5)

    def assert_differ_only_at_ties(
        self,
        model: Any,
        inputs: dict,
        original: torch.Tensor,
        renamed: torch.Tensor,
        permutation: torch.Tensor,
        name: str,
    ) -> None:
        """Each answer that is not the renamed original first departs from it where the original's next-token
        log-probabilities give the two choices the same value (a tie that renaming breaks the other way)."""
        assert renamed.shape == original.shape, f"{name}: answers of other lengths"
        back = self.rename_outputs(renamed, torch.argsort(permutation))  # in the original's names
        per_input = original.shape[0] // inputs["input_ids"].shape[0]
        for row in (back != original).any(-1).nonzero().flatten().tolist():
            position = int((back[row] != original[row]).nonzero()[0])
            one = {key: value[row // per_input : row // per_input + 1] for key, value in inputs.items()}
            with torch.no_grad():
                logits = output_logits(model(**one, decoder_input_ids=original[row : row + 1, :position]))
            scores = logits[0, -1].log_softmax(-1)
            chosen, other = int(original[row, position]), int(back[row, position])
            assert abs(float(scores[chosen] - scores[other])) < 1e-9, f"{name}: row {row} differs at {position}"

    def test_generation_is_renamed_with_the_input(self) -> None:
        # Renaming reorders the streams, and with them the order of float sums: in float32 two near-equal logits
        # can swap on one CPU and not another. In float64 no near-tie is left; an exact tie can be (two symbols that
        # play the same part at a step score alike), and the search breaks it by token id, which renaming changes.
        model = self.make_model().double()
        inputs = self.make_generation_inputs(model)
        permutation = self.symbol_permutation(model, 7)
        renamed_inputs = self.rename_inputs(inputs, permutation)
        for name, kwargs in GENERATION_MODES:
            settings = {"max_new_tokens": self.max_new_tokens, **kwargs}
            original = model.generate(**inputs, **settings)
            renamed = model.generate(**renamed_inputs, **settings)
            expected = self.rename_outputs(original, permutation)
            if not torch.equal(renamed, expected):
                self.assert_differ_only_at_ties(model, inputs, original, renamed, permutation, name)
            assert self.emits_symbols(original, model), f"{name}: no symbol generated, the test would be vacuous"


def rename_symbol_ids(ids: torch.Tensor, permutation: torch.Tensor, num_base: int) -> torch.Tensor:
    """Token ids with symbol slot s (id ``num_base + s``) renamed to slot ``permutation[s]``."""
    symbol = ids >= num_base
    return torch.where(symbol, num_base + permutation[(ids - num_base).clamp(min=0)], ids)


def rename_symbol_inputs(inputs: dict, permutation: torch.Tensor, num_base: int) -> dict:
    """Model inputs with the symbols of ``input_ids`` and ``decoder_input_ids`` renamed by ``permutation``."""
    renamed = dict(inputs)
    for key in ("input_ids", "decoder_input_ids"):
        if key in renamed:
            renamed[key] = rename_symbol_ids(renamed[key], permutation, num_base)
    return renamed


def permute_symbol_columns(logits: torch.Tensor, permutation: torch.Tensor, num_base: int) -> torch.Tensor:
    """Logits of the original input, laid out as the renamed input's should be."""
    out = logits.clone()
    out[..., num_base + permutation] = logits[..., num_base:]
    return out


def config_mutations(value: object) -> list[object]:
    """Values of the same kind as ``value`` but different, and one of the wrong kind."""
    if isinstance(value, bool):
        return [not value, "yes"]
    if isinstance(value, int):
        return [value + 1, max(value - 1, 0) if value else 2, "lots"]
    if isinstance(value, float):
        return [value * 2 + 0.125, "lots"]
    if isinstance(value, str):
        return [value + "x", "EP-EA-DP-CP" if "-" in value else "rope"]
    if isinstance(value, list):
        return [value[:-1], [*value, 1]] if value else [[1]]
    if isinstance(value, dict):
        return [{**value, "unexpected": 1}]
    if value is None:
        return [3]
    return []


class StrictLoadingTesterMixin(ModelFactories):
    """A checkpoint whose config and weights disagree does not load: every config.json field mutated one at a
    time either loads to identical logits or fails naming the field; NaN weights, another architecture's
    weights and a truncated weights file are errors naming the tensors or the file."""

    #: Refusals the family must at least produce among its mutations (a floor, so the test can fail).
    min_refused_fields: int = 10
    #: Fields whose edit may be reported through a field it determines.
    derived_fields: dict[str, tuple[str, ...]] = {}

    def saved_checkpoint(self, folder: os.PathLike) -> tuple[Any, dict[str, Any], torch.Tensor]:
        torch.manual_seed(0)
        model = self.make_model()
        inputs = self.make_inputs(model)
        self.save(model, folder)
        return model, inputs, self.logits(model, inputs)

    @pytest.mark.slow
    def test_every_config_field_mutated_loads_identically_or_fails_naming_the_field(self, tmp_path) -> None:
        import json

        _, inputs, expected = self.saved_checkpoint(tmp_path)
        config_file = tmp_path / "config.json"
        original = json.loads(config_file.read_text())
        # model_type names the family: another value is another model, which AutoConfig resolves (or refuses).
        fields = [(field, value) for field, value in sorted(original.items()) if field != "model_type"]
        outcomes: dict[str, list[str]] = {"identical": [], "refused": []}
        for field, value in fields:
            for mutated in config_mutations(value):
                config_file.write_text(json.dumps({**original, field: mutated}))
                try:
                    model = self.auto_class().from_pretrained(tmp_path).eval()
                except (ValueError, TypeError, KeyError) as error:
                    message = str(error)
                    named = field in message or any(f in message for f in self.derived_fields.get(field, ()))
                    assert named, (field, mutated, message)
                    outcomes["refused"].append(field)
                    continue
                assert torch.equal(self.logits(model, inputs), expected), f"{field}={mutated!r} changed the logits"
                outcomes["identical"].append(field)
        assert len(set(outcomes["refused"])) >= self.min_refused_fields and outcomes["identical"], outcomes

    def test_weights_with_nan_are_reported(self, tmp_path) -> None:
        from safetensors import safe_open
        from safetensors.torch import load_file, save_file

        self.saved_checkpoint(tmp_path)
        weights = tmp_path / "model.safetensors"
        with safe_open(str(weights), framework="pt") as handle:
            metadata = handle.metadata()
        tensors = load_file(weights)
        name = next(key for key, value in tensors.items() if value.dim() == 2)
        tensors[name][0, 0] = float("nan")
        save_file(tensors, weights, metadata=metadata)
        with pytest.raises(ValueError, match=f"NaN or infinite values in {name}"):
            self.auto_class().from_pretrained(tmp_path)

    #: A config field whose increment adds a layer's weights (default: num_layers or encoder_layers).
    layer_count_field: str | None = None

    def test_weights_of_another_architecture_are_refused_naming_the_tensors(self, tmp_path) -> None:
        model, _, _ = self.saved_checkpoint(tmp_path / "one")
        config = model.config.to_dict()
        layer_field = self.layer_count_field or next(f for f in ("num_layers", "encoder_layers") if f in config)
        other = type(model)(type(model.config)(**{**config, layer_field: config[layer_field] + 1}))
        other.save_pretrained(tmp_path / "two")
        (tmp_path / "two" / "config.json").write_text((tmp_path / "one" / "config.json").read_text())
        expected = rf"{layer_field} = {config[layer_field]} \(weights saved with .*unexpected"
        with pytest.raises(ValueError, match=expected):
            self.auto_class().from_pretrained(tmp_path / "two")

    def test_a_truncated_weights_file_is_named(self, tmp_path) -> None:
        self.saved_checkpoint(tmp_path)
        weights = tmp_path / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
        with pytest.raises(ValueError, match=f"cannot read the weights {weights}"):
            self.auto_class().from_pretrained(tmp_path)


def assert_fails(check: Callable[[], None]) -> None:
    """For the negative control of a property: ``check`` must raise AssertionError."""
    try:
        check()
    except AssertionError:
        return
    raise AssertionError("the property holds for a model that should break it: the test could not fail")
