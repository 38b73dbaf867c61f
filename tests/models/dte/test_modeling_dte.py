"""DTE models: the shared model properties, renaming invariance and names never seen, parameter growth,
sparse routing against a dense reference, the sluggish termination's labels, training with ``Trainer``."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from helpers import DTE_BASE_LABELS as BASE_LABELS
from helpers import DTE_SOURCES as SOURCES
from helpers import dte_tiny_model as tiny_model
from helpers import dte_tokenizer as tokenizer
from helpers import dte_trained_model as trained_model
from helpers import mirror_text as mirror
from testers import CompileTesterMixin, ModelTesterMixin, RenamingInvarianceTesterMixin, StrictLoadingTesterMixin
from transformers import Trainer, TrainingArguments

from hf_symbolinv.models.dte import DTEForTreeTransduction, DTETreeTokenizer, modeling_dte
from hf_symbolinv.utils.trees import format_bracketed, parse_bracketed


def model_inputs(texts: list[str]) -> tuple[dict, list[list[str]]]:
    encoded = tokenizer()(texts)
    return encoded, encoded.pop("symbol_names")


class TestDTEModel(ModelTesterMixin, StrictLoadingTesterMixin, RenamingInvarianceTesterMixin):
    expected_saved_files = frozenset(
        {
            "config.json",
            "model.safetensors",
            "configuration_dte.py",
            "config_fields.py",
            "modeling_dte.py",
            "tree_interpreter.py",
            "bracketed.py",
            "loading.py",
            "pipeline_dte.py",
            "tokenization_dte.py",
            "dte_tokenizer.json",
        }
    )

    layer_count_field = "num_experts"

    def make_model(self) -> DTEForTreeTransduction:
        return trained_model(controller="dte", top_k=2)

    def make_inputs(self, model) -> dict:
        return model_inputs(SOURCES)[0]

    def make_tokenizer(self) -> DTETreeTokenizer:
        return tokenizer()

    def loss_for_gradients(self, model, inputs) -> torch.Tensor:
        targets = tokenizer()(SOURCES, [mirror(text) for text in SOURCES])
        targets.pop("symbol_names")
        return model(**targets).loss

    # Renaming: symbols enter as first-appearance indices, so a renaming is a permutation of the indices.
    def symbol_permutation(self, model, seed: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(seed)
        return torch.randperm(model.config.max_symbols, generator=generator)

    def rename_inputs(self, inputs: dict, permutation: torch.Tensor) -> dict:
        renamed = dict(inputs)
        symbols = inputs["input_symbols"]
        renamed["input_symbols"] = torch.where(symbols >= 0, permutation[symbols.clamp(min=0)], symbols)
        renamed["num_symbols"] = torch.full_like(inputs["num_symbols"], len(permutation))
        return renamed

    def permute_logits(self, logits: torch.Tensor, permutation: torch.Tensor) -> torch.Tensor:
        vocab = logits.shape[-1] - len(permutation)
        out = logits.clone()
        out[..., vocab + permutation] = logits[..., vocab:]
        return out

    def make_renaming_inputs(self, model) -> dict:
        inputs = self.make_inputs(model)
        # Every index may be the target of a permutation: let the pointer see all of them.
        inputs["num_symbols"] = torch.full_like(inputs["num_symbols"], model.config.max_symbols)
        return inputs

    def test_logits_permute_under_renaming(self) -> None:
        model = self.make_model()
        inputs = self.make_renaming_inputs(model)
        for seed in range(3):
            permutation = self.symbol_permutation(model, seed)
            with torch.no_grad():
                original = model(**inputs).logits
                renamed = model(**self.rename_inputs(inputs, permutation)).logits
            torch.testing.assert_close(renamed, self.permute_logits(original, permutation), atol=1e-5, rtol=1e-5)

    def test_generation_is_renamed_with_the_input(self) -> None:
        """Answers as strings: renaming the input's names (to names never seen, and to more of them) renames
        the answer."""
        model = self.make_model()
        tok = tokenizer()
        encoded, names = model_inputs(SOURCES)
        with torch.no_grad():
            out = model(**encoded)
        answers = tok.batch_decode(out.label_logits, out.symbol_probs, names)
        assert any(any(name in answer for name in row) for answer, row in zip(answers, names)), answers
        renaming = {"a": "zebra", "b": "q7", "c": "longname", "x": "b", "y": "a", "z": "xx", "p": "c", "q": "w"}

        def rename(text: str) -> str:
            return format_bracketed(_rename_tree(parse_bracketed(text), renaming))

        renamed_encoded, renamed_names = model_inputs([rename(text) for text in SOURCES])
        with torch.no_grad():
            renamed_out = model(**renamed_encoded)
        renamed_answers = tok.batch_decode(renamed_out.label_logits, renamed_out.symbol_probs, renamed_names)
        assert renamed_answers == [rename(answer) for answer in answers]


def _rename_tree(node, renaming: dict[str, str]):
    if node is None:
        return None
    if isinstance(node, str):
        return renaming.get(node, node)
    return (renaming.get(node[0], node[0]), _rename_tree(node[1], renaming), _rename_tree(node[2], renaming))


def test_a_symbol_given_its_own_label_breaks_the_invariance():
    """The control: were names base labels with fillers of their own, renaming a <-> b would not swap the
    answer's a and b (so the invariance tests above can fail)."""
    named = DTETreeTokenizer([*BASE_LABELS, "a", "b"], max_depth=3, max_symbols=8)
    model = tiny_model(vocab_size=named.vocab_size)
    first, second = named("(f a b)"), named("(f b a)")
    first.pop("symbol_names"), second.pop("symbol_names")
    a, b = named.label_ids["a"], named.label_ids["b"]
    with torch.no_grad():
        original = model(**first).label_logits
        renamed = model(**second).label_logits
    swapped = original.clone()
    swapped[..., [a, b]] = original[..., [b, a]]
    assert not torch.allclose(renamed, swapped, atol=1e-3)
    # The invariant tokenizer gives both inputs the same tensors: the answers are renamed exactly.
    plain = tokenizer()
    assert all(torch.equal(plain("(f a b)")[key], plain("(f b a)")[key]) for key in ("input_labels", "input_symbols"))


def _leaves(node) -> list[str]:
    if node is None:
        return []
    if isinstance(node, str):
        return [node]
    return _leaves(node[1]) + _leaves(node[2])


def test_more_symbols_than_trained_run():
    model = trained_model(controller="dte", top_k=2)
    tok = DTETreeTokenizer(BASE_LABELS, max_depth=3, max_symbols=8)
    # Trained on inputs of at most 3 symbols: 7 here, all names never seen.
    encoded = tok("(f (g (f s0 s1) (h s2 s3)) (g s4 (h s5 s6)))")
    names = encoded.pop("symbol_names")
    assert len(names[0]) == 7
    with torch.no_grad():
        out = model(**encoded)
    answer = parse_bracketed(tok.batch_decode(out.label_logits, out.symbol_probs, names)[0])
    leaves = _leaves(answer)
    assert leaves and set(leaves) <= set(names[0]) | set(BASE_LABELS)


def test_dtm_parameters_grow_with_steps_and_dte_parameters_do_not():
    def count(**overrides) -> int:
        return sum(p.numel() for p in tiny_model(**overrides).parameters())

    dtm = [count(controller="dtm", num_steps=steps) for steps in (2, 4, 8)]
    dte = [count(controller="dte", num_steps=steps) for steps in (2, 4, 8)]
    layer = dtm[1] - dtm[0]
    assert layer > 0 and dtm[2] - dtm[1] == 2 * layer
    # The DTE has no per-step parameter (memory slots have a sinusoidal code).
    assert dte[0] == dte[1] == dte[2]


def test_sparse_routing_equals_a_dense_mixture_with_the_other_gates_zeroed():
    model = tiny_model(controller="dte", top_k=2)
    tokens = torch.randn(3, 5, 16)
    with torch.no_grad():
        operations, arguments, root = model._controller(tokens, step=1)
        routed = model.router_layer(tokens)[:, 0]
        from hf_symbolinv.models.dte.modeling_dte import sinusoidal_encoding

        code = sinusoidal_encoding(1, 16).expand_as(routed)
        gates = model.router(torch.cat([routed, code], -1)).softmax(-1)
        top, chosen = gates.topk(2, dim=-1)
        sparse = torch.zeros_like(gates).scatter(-1, chosen, top / top.sum(-1, keepdim=True))
        expected_ops = sum(
            sparse[:, e, None] * model._heads(expert(tokens))[0] for e, expert in enumerate(model.experts)
        )
        expected_root = sum(
            sparse[:, e, None] * model._heads(expert(tokens))[2] for e, expert in enumerate(model.experts)
        )
    assert int((sparse > 0).sum()) == 3 * 2
    torch.testing.assert_close(operations, expected_ops)
    torch.testing.assert_close(root, expected_root)
    torch.testing.assert_close(arguments.sum(-1), torch.ones(3, 4))
    # The compiled graph's mixture (every expert on every sample, the gates of the others zero) is the same.
    for dense, sparse_part in zip(model._dense_mixture(tokens, sparse), (operations, arguments, root)):
        torch.testing.assert_close(dense, sparse_part)


@pytest.mark.parametrize(
    ("damper", "explorer", "damper_target", "explorer_target"),
    [
        # The explorer is confident elsewhere: the damper follows it; the explorer stays.
        ((1, True), (3, True), 3, 3),
        # The explorer is not confident: the damper stays, and so does the explorer (they disagree).
        ((1, True), (3, False), 1, 3),
    ],
)
def test_sluggish_labels_follow_equations_2_and_3(damper, explorer, damper_target, explorer_target):
    model = tiny_model(termination="sluggish", num_steps=6).train()
    with torch.no_grad():
        for predictor, (index, confident) in ((model.damper, damper), (model.explorer, explorer)):
            predictor.zero_()
            # x100: 5 above the rest is confident (p > 0.96); 0.5 above is the argmax, not confident (p = 0.25).
            predictor[index] = 0.05 if confident else 0.005
    targets = tokenizer()(SOURCES, [mirror(text) for text in SOURCES])
    targets.pop("symbol_names")
    model(**targets).loss.backward()
    # Cross-entropy pushes the label's parameter up: the most negative gradient is at the label.
    assert int(model.damper.grad.argmin()) == damper_target
    assert int(model.explorer.grad.argmin()) == explorer_target


def test_sluggish_explorer_moves_to_the_best_local_step_when_both_agree():
    """Both predictors confident at step index 2: the explorer's label is the best of {i-4, i, i+5} after the
    penalty, i.e. a step whose loss is lowest (here the loss is made to favour the last choice)."""
    model = tiny_model(termination="sluggish", num_steps=8).train()
    with torch.no_grad():
        model.damper.zero_()
        model.explorer.zero_()
        model.damper[2] = model.explorer[2] = 0.05
    targets = tokenizer()(SOURCES, [mirror(text) for text in SOURCES])
    targets.pop("symbol_names")
    losses = {}

    original = model.tree_loss

    def recording_loss(label_logits, symbol_probs, labels, label_symbols, tree=None):
        loss = original(label_logits, symbol_probs, labels, label_symbols, tree)
        losses[len(losses)] = float(loss.detach())
        return loss

    model.tree_loss = recording_loss
    model(**targets).loss.backward()
    # Looked at: steps 0 (2-4 clipped), 2 and 7 (2+5), in this order.
    scores = {0: losses[0] / 0.9**0, 2: losses[1] / 0.9**1, 7: losses[2] / 0.9**2}
    best = min(scores, key=scores.get)
    assert int(model.explorer.grad.argmin()) == best
    assert int(model.damper.grad.argmin()) == 2


def test_inputs_that_disagree_are_named():
    model = tiny_model()
    encoded, _ = model_inputs(SOURCES)
    bad = dict(encoded)
    bad["input_symbols"] = encoded["input_symbols"].clone()
    bad["input_symbols"][1, 0] = 0  # the root of row 1 is a base label
    with pytest.raises(ValueError, match="disagree at row 1, position 0"):
        model(**bad)
    with pytest.raises(ValueError, match=r"input_labels must be \(batch, 15\)"):
        model(input_labels=encoded["input_labels"][:, :7], input_symbols=encoded["input_symbols"][:, :7])


@pytest.mark.parametrize(("controller", "termination", "top_k"), [("dtm", "oracle", 4), ("dte", "sluggish", 2)])
def test_trainer_trains_and_the_loss_falls(tmp_path, controller, termination, top_k):
    tok = tokenizer()
    rows = tok(SOURCES, [mirror(text) for text in SOURCES])
    rows.pop("symbol_names")
    data = Dataset.from_dict({key: value.tolist() for key, value in rows.items()})
    model = tiny_model(controller=controller, termination=termination, top_k=top_k).train()
    args = TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        max_steps=40,
        learning_rate=1e-2,
        lr_scheduler_type="constant",
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert sum(losses[-5:]) / 5 < 0.7 * sum(losses[:5]) / 5, losses


@pytest.mark.slow
def test_the_pipeline_answers_like_the_model_and_loads_without_the_package(tmp_path):
    model = trained_model(controller="dte", top_k=2)
    tok = tokenizer()
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    encoded, names = model_inputs(SOURCES)
    with torch.no_grad():
        out = model(**encoded)
    expected = tok.batch_decode(out.label_logits, out.symbol_probs, names)
    from transformers import pipeline

    pipe = pipeline("tree-transduction", model=str(tmp_path), trust_remote_code=True)
    assert [answer[0]["generated_text"] for answer in pipe(SOURCES)] == expected
    # More steps than the model's default: an oracle count for harder inputs.
    assert len(pipe(SOURCES[0], num_steps=6)) == 1
    script = f"""
import sys
sys.modules["hf_symbolinv"] = None
from transformers import pipeline
pipe = pipeline("tree-transduction", model={str(tmp_path)!r}, trust_remote_code=True)
assert not type(pipe).__module__.startswith("hf_symbolinv")
print("ANSWERS", [answer[0]["generated_text"] for answer in pipe({SOURCES!r})])
"""
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"ANSWERS {expected!r}" in done.stdout, done.stdout


def test_num_steps_overrides_the_steps_run_and_is_refused_while_a_sluggish_model_trains():
    model = tiny_model(controller="dte")
    inputs, _ = model_inputs(SOURCES)
    longer = model(**inputs, num_steps=6)
    assert longer.num_steps == 6 and longer.operation_weights.shape[1] == 6
    # The same steps as running the interpreter by hand, then reading out.
    trees, _ = model.run_steps(model.input_trees(inputs["input_labels"], inputs["input_symbols"]), 6)
    label_logits, _ = model.read_out(trees[-1], inputs["num_symbols"])
    torch.testing.assert_close(longer.label_logits, label_logits)
    sluggish = tiny_model(termination="sluggish", num_steps=6).train()
    targets = tokenizer()(SOURCES, [mirror(text) for text in SOURCES])
    targets.pop("symbol_names")
    with pytest.raises(ValueError, match="num_steps: a sluggish model in training chooses its own steps"):
        sluggish(**targets, num_steps=3)


# An input whose leaves are all base labels: its pointer has no symbol to normalise over.
SYMBOL_FREE_SOURCE = "(f g h)"


@pytest.mark.parametrize(
    "overrides",
    [
        {"controller": "dtm"},
        {"controller": "dte", "top_k": 2},
        {"controller": "dte", "termination": "sluggish", "num_steps": 6},
    ],
    ids=["dtm", "sparse-dte", "sluggish-dte"],
)
def test_a_sample_without_symbols_trains_beside_the_others(overrides):
    """Its symbol probabilities are zeros, not 0 / 0 (NaN): the batch's loss and gradients are finite, and the
    other samples' loss terms are those of a batch without it."""
    model = tiny_model(**overrides).train()
    sources = [SOURCES[0], SYMBOL_FREE_SOURCE, *SOURCES[1:]]
    mixed = training_batch(sources)
    assert mixed["num_symbols"][1] == 0
    out = model(**mixed)
    assert torch.isfinite(out.loss)
    out.loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert grads
    for name, grad in grads.items():
        assert torch.isfinite(grad).all(), name
    assert torch.equal(out.symbol_probs[1], torch.zeros_like(out.symbol_probs[1]))
    assert not out.logits.isnan().any()

    def sample_losses(output, batch: dict) -> list[torch.Tensor]:
        keys = ("labels", "label_symbols")
        return [
            model.tree_loss(
                output.label_logits[row : row + 1],
                output.symbol_probs[row : row + 1],
                *(batch[key][row : row + 1] for key in keys),
            ).detach()
            for row in range(len(batch["labels"]))
        ]

    mixed_losses = sample_losses(out, mixed)
    assert torch.isfinite(mixed_losses[1])
    with torch.no_grad():
        plain = training_batch(SOURCES)
        plain_losses = sample_losses(model(**plain), plain)
    others = [loss for row, loss in enumerate(mixed_losses) if row != 1]
    torch.testing.assert_close(torch.stack(others), torch.stack(plain_losses), atol=1e-6, rtol=1e-6)


def test_a_sample_without_symbols_decodes():
    """Answering: the symbol-free input's answer decodes, and the other input's is the one it gets alone."""
    model = trained_model(controller="dte", top_k=2)
    tok = tokenizer()

    def answers(sources: list[str]) -> list[str]:
        encoded, names = model_inputs(sources)
        with torch.no_grad():
            out = model(**encoded)
        assert not out.logits.isnan().any() and not out.symbol_probs.isnan().any()
        return tok.batch_decode(out.label_logits, out.symbol_probs, names)

    symbol_free, other = answers([SYMBOL_FREE_SOURCE, SOURCES[0]])
    # Trained on symbol leaves only, the model may put a symbol where there is none to copy: "<unknown-symbol>".
    assert parse_bracketed(symbol_free) is not None
    assert other == answers([SOURCES[0]])[0]


# --------------------------------------------------------------------------------------------------
# torch.compile
# --------------------------------------------------------------------------------------------------
def training_batch(sources: list[str]) -> dict:
    batch = tokenizer()(sources, [mirror(text) for text in sources])
    batch.pop("symbol_names")
    return batch


class DTECompileTests(CompileTesterMixin):
    """A training step of one variant compiled with ``fullgraph=True``; the subclasses name the variant."""

    overrides: dict = {}

    def make_model(self) -> DTEForTreeTransduction:
        return tiny_model(**{"num_steps": 2, **self.overrides})

    def make_bucket_batches(self, model) -> tuple[dict, dict, dict]:
        # Trees are (batch, num_roles) for the model's max_depth: the batch size is the only shape that varies. The
        # other bucket holds an input without symbols: its zero symbol probabilities must keep the compiled loss and
        # gradients finite (its logits are differentiated too) and equal to eager mode's.
        return (
            training_batch(SOURCES),
            training_batch(SOURCES[::-1]),
            training_batch([SOURCES[0], SYMBOL_FREE_SOURCE, *SOURCES[1:]]),
        )


class TestDTMCompile(DTECompileTests):
    overrides = {"controller": "dtm"}

    def test_a_compiled_graph_keeps_the_input_checks(self) -> None:
        import torch._dynamo

        torch._dynamo.reset()
        model = self.make_model().train()
        model.compile(fullgraph=True, dynamic=False, backend=self.compile_backend)
        batch = training_batch(SOURCES)
        model(**batch).loss.backward()
        batch["input_symbols"][1, 0] = 0  # the root of row 1 is a base label
        with pytest.raises(RuntimeError, match="input_symbols and input_labels disagree"):
            model(**batch)


class TestChosenDTMCompile(DTECompileTests):
    """Chosen steps (one-hot forward, softmax gradients) and a controller that reads the top two levels."""

    overrides = {"controller": "dtm", "hardness": 1.0, "controller_depth": 1}


class TestSparseDTECompile(DTECompileTests):
    overrides = {"controller": "dte", "num_experts": 3, "top_k": 2}

    def make_model(self) -> DTEForTreeTransduction:
        # At initialisation every sample routes alike (the trees' tokens are mostly their slot codes): wider
        # weights make the samples choose different experts, and every expert chosen by some sample (else its
        # gradient is None in eager mode and zero in the compiled dense mixture).
        model = super().make_model()
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            model.tree_encoder.weight.normal_(std=1.0, generator=generator)
            model.router.weight.normal_(std=1.0, generator=generator)
        return model

    def test_the_samples_route_to_different_experts(self) -> None:
        """The precondition of the compile tests: the sparse routing's data-dependent rows are exercised."""
        model = self.make_model().train()
        chosen = []
        model.router.register_forward_hook(lambda module, args, logits: chosen.append(logits.topk(2, dim=-1).indices))
        model(**self.make_bucket_batches(model)[0])
        routes = torch.stack(chosen).sort(-1).values  # (steps, batch, top_k)
        assert (routes != routes[:, :1]).any(), "every sample chose the same experts"
        assert set(routes.unique().tolist()) == set(range(model.config.num_experts))


class TestTDTECompile(DTECompileTests):
    """The sluggish termination (dense mixture): the compiled graph runs every step and selects with tensors."""

    overrides = {"controller": "dte", "termination": "sluggish"}


@pytest.mark.parametrize(
    ("damper", "explorer", "num_steps"),
    [
        ((5, True), (5, True), 6),  # both confident and agreeing: the explorer's label is the best local step
        ((2, True), (2, True), 8),  # the same, choices {0, 2, 7}
        ((1, True), (1, True), 12),  # choices {0, 1, 6}: the eager rule runs 7 of the 12 steps
        ((1, True), (3, True), 6),  # the damper follows the confident explorer
        ((1, True), (3, False), 6),  # an explorer not confident: both stay
        ((3, False), (3, True), 6),  # agreeing, the damper not confident
        ((0, True), (0, True), 1),  # one step: no other step looked at, no residual term
    ],
)
def test_the_all_steps_sluggish_rule_matches_the_eager_one(damper, explorer, num_steps):
    """The compiled graph's sluggish forward (every step run, the rule's choices as tensors) against the eager
    one, run eagerly on predictor states that take every branch of the rule: the same loss, answer and
    gradients (extra steps only add exact zeros)."""
    model = tiny_model(termination="sluggish", num_steps=num_steps).train()
    with torch.no_grad():
        for predictor, (index, confident) in ((model.damper, damper), (model.explorer, explorer)):
            predictor.zero_()
            predictor[index] = 0.05 if confident else 0.005
    batch = training_batch(SOURCES)
    input_tree = model.input_trees(batch["input_labels"], batch["input_symbols"])
    args = (batch["num_symbols"], batch["labels"], batch["label_symbols"])
    results = {}
    for name, rule in (("eager", model._sluggish_forward), ("all_steps", model._sluggish_forward_all_steps)):
        model.zero_grad()
        loss, steps, trees, operation_weights, label_logits, symbol_probs = rule(input_tree, *args)
        loss.backward(retain_graph=True)
        grads = {key: p.grad.clone() for key, p in model.named_parameters() if p.grad is not None}
        results[name] = (loss.detach(), int(steps), label_logits.detach(), symbol_probs.detach(), grads)
    eager, all_steps = results["eager"], results["all_steps"]
    torch.testing.assert_close(all_steps[0], eager[0], atol=1e-6, rtol=1e-6)
    assert all_steps[1] == eager[1] == damper[0] + 1
    torch.testing.assert_close(all_steps[2], eager[2])
    torch.testing.assert_close(all_steps[3], eager[3])
    assert all_steps[4].keys() == eager[4].keys()
    for key, grad in eager[4].items():
        torch.testing.assert_close(all_steps[4][key], grad, atol=1e-6, rtol=1e-6, msg=key)


@pytest.mark.parametrize(("controller", "encoder_init"), [("dtm", "zero"), ("dte", "zero"), ("dtm", "normal")])
def test_a_grown_model_answers_as_before_and_takes_deeper_trees(tmp_path, controller, encoder_init):
    # Two steps push a node at most two levels down: from an input of depth <= 1 nothing reaches below depth 3,
    # so the model grown to depth 6 must give the same answers as the model of depth 3.
    model = trained_model(controller=controller, num_steps=2, tree_encoder_init=encoder_init)
    old_roles = model.interpreter.num_roles
    shallow = ["(f p q)", "(g x y)", "(h a b)"]
    encoded, names = model_inputs(shallow)
    with torch.no_grad():
        before = model(**encoded)
    answers = tokenizer().batch_decode(before.label_logits, before.symbol_probs, names)
    assert any(answer != "_" for answer in answers)  # not a vacuous comparison of empty trees

    model.resize_max_depth(6)
    assert model.config.max_depth == 6 and model.interpreter.num_roles == 127
    deeper = tokenizer().with_max_depth(6)
    assert deeper.max_depth == 6 and deeper.to_dict() == {**tokenizer().to_dict(), "max_depth": 6}
    grown_inputs = deeper(shallow)
    grown_inputs.pop("symbol_names")
    with torch.no_grad():
        after = model(**grown_inputs)
    # The grown encoder sums over more (zero) terms, which another CPU's kernels may order otherwise: a margin.
    torch.testing.assert_close(after.label_logits[:, :old_roles], before.label_logits, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(after.symbol_probs[:, :old_roles], before.symbol_probs, rtol=1e-4, atol=1e-5)
    assert (after.label_logits[:, old_roles:].argmax(-1) == 0).all()  # nothing below the old depth
    assert deeper.batch_decode(after.label_logits, after.symbol_probs, names) == answers

    # A tree of depth 5 is refused at depth 3 and read once grown; the grown model saves and loads strictly.
    deep_tree = "(f (g (h (f (g a b) c) d) e) p)"
    with pytest.raises(ValueError, match="max_depth=3"):
        tokenizer()(deep_tree)
    deep_inputs = deeper(deep_tree)
    deep_inputs.pop("symbol_names")
    with torch.no_grad():
        expected = model(**deep_inputs).label_logits
    model.save_pretrained(tmp_path)
    deeper.save_pretrained(tmp_path)
    loaded = DTEForTreeTransduction.from_pretrained(tmp_path).eval()
    DTETreeTokenizer.from_pretrained(tmp_path).check_model_config(loaded.config)
    with torch.no_grad():
        torch.testing.assert_close(loaded(**deep_inputs).label_logits, expected)


def test_the_empty_filler_stays_zero_in_training_and_a_model_that_learned_one_does_not_grow():
    model = trained_model(controller="dtm", num_steps=2)
    assert not model.fillers.weight[0].any() and model.fillers.weight[1:].abs().sum() > 0
    with torch.no_grad():
        model.fillers.weight[0] = 0.5  # as models trained before the rule learned it
    with pytest.raises(ValueError, match="empty filler is not zero"):
        model.resize_max_depth(5)
    assert model.config.max_depth == 3


def test_a_model_only_grows_and_within_the_deepest_tree():
    model = tiny_model()
    for depth in (2, 13, 3.5, True):
        with pytest.raises(ValueError, match="max_depth"):
            model.resize_max_depth(depth)
        assert model.config.max_depth == 3 and model.interpreter.num_roles == 15
    weight = model.tree_encoder.weight.clone()
    model.resize_max_depth(3)  # the same depth: nothing changes
    assert torch.equal(model.tree_encoder.weight, weight)


def test_a_position_no_training_tree_fills_is_never_read():
    # One step: the controller reads only the empty tree and the inputs (depth <= 2 of max_depth 3), so the tree
    # encoder's weights of the depth-3 positions get no gradient and stay at their zero start.
    model = trained_model(controller="dtm", num_steps=1, tree_encoder_init="zero")
    weight = model.tree_encoder.weight.view(model.config.d_model, model.config.filler_dim, -1)
    assert not weight[:, :, 7:].any() and weight[:, :, :7].abs().sum() > 0
    # So two trees alike down to depth 2, with other labels at depth 3, get the same first operation.
    batch = tokenizer()(["(f (g a (h b c)) d)", "(f (g a (h f g)) d)"])
    batch.pop("symbol_names")
    with torch.no_grad():
        first = model(**batch).operation_weights[:, 0]
    torch.testing.assert_close(first[0], first[1])
    # Started from small random weights (the default), those positions are read.
    assert tiny_model().tree_encoder.weight.view(16, 8, -1)[:, :, 7:].abs().sum() > 0


# --------------------------------------------------------------------------------------------------
# The squared-error term (mse_weight)
# --------------------------------------------------------------------------------------------------
def test_the_squared_error_term_is_each_positions_distance_from_its_target():
    model = trained_model(controller="dtm", num_steps=2)
    batch = training_batch(SOURCES)
    with torch.no_grad():
        plain = model(**batch, output_trees=True)
        model.config.mse_weight = 0.5
        weighted = model(**batch).loss
    # The naive reference, position by position: the answer tree's content against the target label's filler
    # (zero for an empty position), over the fillers' mean squared norm; its symbol channel, as it is, against
    # the symbol's one-hot (zero where the answer holds no symbol).
    labels, symbols = batch["labels"], batch["label_symbols"]
    fillers = model.fillers.weight.detach()
    dim = model.config.filler_dim
    tree = plain.trees[:, -1]
    expected = 0.0
    for row in range(labels.shape[0]):
        for position in range(labels.shape[1]):
            label = int(labels[row, position])
            if label == -100:
                continue
            target = fillers[label] if label != 0 else torch.zeros(dim)
            scale = float(fillers[1:].square().sum(-1).mean())
            expected += float((tree[row, :dim, position] - target).square().sum()) / scale
            one_hot = torch.zeros(model.config.max_symbols)
            if int(symbols[row, position]) >= 0:
                one_hot[int(symbols[row, position])] = 1.0
            expected += float((tree[row, dim:, position] - one_hot).square().sum())
    nodes = int(((labels != 0) & (labels != -100)).sum())
    assert expected > 0
    torch.testing.assert_close((weighted - plain.loss).item() * nodes, 0.5 * expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="mse_weight"):
        model.tree_loss(plain.label_logits, plain.symbol_probs, labels, symbols)


def test_a_blend_or_a_trace_of_a_tree_pays_the_squared_error_and_decodes_as_the_tree():
    model = tiny_model(mse_weight=1.0)
    batch = training_batch(["(f a (g b c))", "(g (f c b) a)"])
    trees = model.input_trees(batch["labels"], batch["label_symbols"])
    labels, symbols = batch["labels"][:1], batch["label_symbols"][:1]
    candidates = {
        "exact": trees[:1],
        "blend": 0.6 * trees[:1] + 0.4 * trees[1:],
        # The right symbols, but only as a trace (a blended step's 1e-4): the pointer, which normalises, reads
        # them as well as whole ones.
        "trace": torch.cat([trees[:1, : model.config.filler_dim], 1e-4 * trees[:1, model.config.filler_dim :]], 1),
    }
    errors = {}
    with torch.no_grad():
        for name, tree in candidates.items():
            errors[name] = float(model.squared_error(tree, labels, symbols))
            label_logits, symbol_probs = model.read_out(tree, torch.tensor([3]))
            # Each decodes as the first tree: the cross-entropy's argmax cannot tell them apart.
            assert torch.equal(label_logits.argmax(-1), labels.clamp(min=0)), name
            is_symbol = symbols >= 0
            assert torch.equal(symbol_probs.argmax(-1)[is_symbol], symbols[is_symbol]), name
    assert errors["exact"] < 1e-9 and errors["blend"] > 0.5 and errors["trace"] > 2.9


def test_a_negative_mse_weight_is_refused():
    with pytest.raises(ValueError, match="mse_weight"):
        tiny_model(mse_weight=-0.1)


# --------------------------------------------------------------------------------------------------
# Chosen steps (hardness)
# --------------------------------------------------------------------------------------------------
def test_hardness_moves_the_weights_toward_the_choice_and_keeps_their_gradients():
    weights = torch.tensor([[0.2, 0.5, 0.3], [0.7, 0.1, 0.2]], requires_grad=True)
    choice = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    probe = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for hardness in (0.0, 0.5, 1.0):
        moved = modeling_dte.toward_choice(weights, hardness)
        torch.testing.assert_close(moved.detach(), (1 - hardness) * weights.detach() + hardness * choice)
        weights.grad = None
        (moved * probe).sum().backward()
        torch.testing.assert_close(weights.grad, probe)  # the gradient of the weights themselves


def test_a_chosen_step_is_one_operation_on_whole_trees_and_leaks_no_trace():
    model = trained_model(controller="dtm", num_steps=3, hardness=1.0)
    batch = training_batch(SOURCES)
    output = model(**batch, output_trees=True)
    dim = model.config.filler_dim
    memory = output.trees.detach()
    interpreter = model.interpreter
    for step in range(3):
        # Each new tree is one operation on trees already in memory (cons's root is the controller's own).
        new, old = memory[:, step + 2], memory[:, : step + 2]
        operation = output.operation_weights[:, step].argmax(-1)
        torch.testing.assert_close(output.operation_weights[:, step].sum(-1), torch.ones(len(SOURCES)))
        for row in range(len(SOURCES)):
            if operation[row] == 2:
                moved = new[row].clone()
                moved[:, 0] = 0.0  # the root cons wrote
                candidates = [
                    interpreter.cons(left, right, torch.zeros(left.shape[0])) for left in old[row] for right in old[row]
                ]
            else:
                moved = new[row]
                unbind = interpreter.car if operation[row] == 0 else interpreter.cdr
                candidates = [unbind(tree) for tree in old[row]]
            assert any(torch.allclose(moved, candidate, atol=1e-5) for candidate in candidates), (step, row)
    # So the symbol channel holds whole symbols or nothing: no trace of a tree a step did not choose.
    identity = memory[:, :, dim:]
    assert torch.all((identity.abs() < 1e-5) | ((identity - 1).abs() < 1e-5))
    # The controller still learns: the straight-through gradients reach the operation head.
    output.loss.backward()
    assert model.operation_head.weight.grad.abs().sum() > 0


def test_the_same_weights_blended_leak_traces():
    model = trained_model(controller="dtm", num_steps=3, hardness=1.0)
    model.config.hardness = 0.0
    batch = training_batch(SOURCES)
    with torch.no_grad():
        identity = model(**batch, output_trees=True).trees[:, 2:, model.config.filler_dim :]
    assert torch.any((identity.abs() > 1e-3) & ((identity - 1).abs() > 1e-3))


@pytest.mark.parametrize("hardness", [-0.1, 1.5])
def test_a_hardness_outside_0_1_is_refused(hardness):
    with pytest.raises(ValueError, match="hardness"):
        tiny_model(hardness=hardness)


# --------------------------------------------------------------------------------------------------
# The levels the controller reads (controller_depth)
# --------------------------------------------------------------------------------------------------
def test_the_controller_reads_no_level_below_controller_depth():
    # Two inputs alike down to depth 1 and unlike below it: the first step, which reads only them, chooses alike
    # (later steps read the trees that car and cdr moved up, whose top levels may differ).
    sources = ["(f (g a b) (h c d))", "(f (g (h b c) a) (h d (f a b)))"]
    batch = tokenizer()(sources)
    batch.pop("symbol_names")
    for depth, alike in ((1, True), (2, False), (None, False)):
        model = tiny_model(controller="dtm", num_steps=3, controller_depth=depth)
        with torch.no_grad():
            weights = model(**batch).operation_weights[:, 0]
        assert torch.allclose(weights[0], weights[1], atol=1e-6) is alike, depth


def test_a_controller_depth_below_0_or_past_max_depth_is_refused():
    for depth in (-1, 4):
        with pytest.raises(ValueError, match="controller_depth"):
            tiny_model(controller_depth=depth)
    # A model grows past it (the levels it reads stay the top ones).
    model = tiny_model(controller_depth=3)
    model.resize_max_depth(5)
    assert model.config.controller_depth == 3
