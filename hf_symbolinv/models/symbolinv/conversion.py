"""Retrofit existing checkpoints into the stream architecture (paper §5.8).

Two sources:

* a fixed-embedding model of this family (``embedding_type="fixed"`` or ``"alpha_renaming"``, attention
  EP-DP-CP): it becomes a SIT with the same tensors. The embedding keeps the base rows (matched by
  token string, never by position), the *actual* row is the row of one symbol and the *placeholder*
  row that of another; every other tensor is copied one to one. Only the other symbols' rows are
  dropped and no parameter is added. With one symbol in the input the two models then compute the
  same thing (the symbol is embedded with the actual row in both); fine-tuning teaches the model to
  use the placeholder for the other symbols.
* a standard Hugging Face encoder-decoder (BART, Marian, M2M100, ...): it is wrapped as a per-stream
  model (:mod:`.modeling_symbolinv_wrapper`) without changing a weight.

``symbolinv convert SRC DST --actual a --placeholder b`` runs :func:`convert_checkpoint`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...utils.model_card import render_card

#: Embedding types whose symbols have one learned row each: the ones a conversion can start from.
CONVERTIBLE_EMBEDDINGS = ("fixed", "alpha_renaming")
EMBEDDING_KEY = "model.shared.weight"


@dataclass
class ConversionReport:
    """What a conversion mapped, kept and dropped."""

    kind: str  # "family" (fixed -> streams) or "wrapper" (a standard encoder-decoder)
    source: str
    source_model_type: str
    actual: str
    placeholder: str
    actual_source_id: int
    placeholder_source_id: int
    parameters_before: int
    parameters_after: int
    base_tokens: int = 0
    dropped_symbols: list[str] = field(default_factory=list)
    symbol_count: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"converted {self.source} ({self.source_model_type}) -> "
            + ("SIT (embedding_type='streams')" if self.kind == "family" else "per-stream wrapper")
        ]
        if self.kind == "family":
            lines += [
                f"  base rows: {self.base_tokens} tokens, matched by token string",
                f"  actual row      <- row of {self.actual!r} (source id {self.actual_source_id})",
                f"  placeholder row <- row of {self.placeholder!r} (source id {self.placeholder_source_id})",
                f"  dropped rows: {len(self.dropped_symbols)} other symbols ({', '.join(self.dropped_symbols)})",
                "  every other tensor: copied one to one",
            ]
        else:
            lines += [
                f"  symbols: {self.symbol_count} vocabulary entries",
                f"  actual token {self.actual!r} (id {self.actual_source_id}), "
                f"placeholder token {self.placeholder!r} (id {self.placeholder_source_id})",
                "  every tensor: unchanged",
            ]
        lines.append(f"  parameters: {self.parameters_before:,} -> {self.parameters_after:,}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def _count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def _symbol_id(tokenizer: Any, name: str, role: str, num_base: int, rows: int) -> int:
    vocabulary = tokenizer.get_vocab()
    if name not in vocabulary:
        raise ValueError(
            f"--{role} {name!r} is not in the checkpoint's vocabulary; choose a symbol the model has a "
            f"row for ({', '.join(_symbol_names(tokenizer, num_base, rows))})"
        )
    token_id = vocabulary[name]
    if token_id < num_base:
        raise ValueError(f"--{role} {name!r} is a base token (id {token_id}), not an interchangeable symbol")
    if token_id >= rows:
        raise ValueError(
            f"--{role} {name!r} has no learned row in this checkpoint (it has rows for "
            f"{rows - num_base} symbols: {', '.join(_symbol_names(tokenizer, num_base, rows))})"
        )
    return token_id


def _symbol_names(tokenizer: Any, num_base: int, rows: int) -> list[str]:
    return tokenizer.convert_ids_to_tokens(list(range(num_base, rows)))


def convert_family_model(
    model: Any,
    tokenizer: Any,
    actual: str = "a",
    placeholder: str = "b",
    symbols: str | None = None,
    source: str = "model",
) -> tuple[Any, Any, ConversionReport]:
    """A fixed-embedding ``SymbolInvForConditionalGeneration`` -> a SIT with the same tensors.

    ``symbols``: an optional regex for the converted tokenizer's symbol names (the converted model
    accepts any names; the source tokenizer's rule is kept by default).
    """
    import copy

    import torch

    from .modeling_symbolinv import SymbolInvForConditionalGeneration
    from .tokenization_symbolinv import SymbolInvTokenizer

    config = model.config
    if config.embedding_type == "streams":
        raise ValueError(f"{source} is already a stream model (embedding_type='streams'): nothing to convert")
    if config.embedding_type not in CONVERTIBLE_EMBEDDINGS:
        raise ValueError(
            f"{source} has embedding_type={config.embedding_type!r}; only {CONVERTIBLE_EMBEDDINGS} "
            "models have one learned row per symbol to map"
        )
    if actual == placeholder:
        raise ValueError(
            f"--actual and --placeholder are both {actual!r}; they must be two different symbols "
            "(the placeholder row must differ from the actual row)"
        )
    num_base = config.num_base_tokens
    rows = num_base + config.num_symbol_embeddings
    actual_id = _symbol_id(tokenizer, actual, "actual", num_base, rows)
    placeholder_id = _symbol_id(tokenizer, placeholder, "placeholder", num_base, rows)

    new_config = copy.deepcopy(config)
    new_config.embedding_type = "streams"
    new_config.validate_combinations()
    rule = tokenizer.rule.to_dict() if symbols is None else symbols
    new_tokenizer = SymbolInvTokenizer(
        vocabulary=tokenizer.task_vocabulary.name, symbol_rule=rule, max_symbols=tokenizer.max_symbols
    )
    # Base rows by token string: the converted tokenizer's base token j takes the source row of the
    # token with the same name, wherever the source vocabulary put it.
    source_vocabulary = tokenizer.get_vocab()
    base_names = new_tokenizer.convert_ids_to_tokens(list(range(new_tokenizer.num_base_tokens)))
    missing = [name for name in base_names if name not in source_vocabulary]
    if missing:
        raise ValueError(
            f"the source vocabulary lacks the base token(s) {missing}; it is not the "
            f"{tokenizer.task_vocabulary.name!r} vocabulary the converted model uses"
        )
    base_rows = [source_vocabulary[name] for name in base_names]

    state = model.state_dict()
    weight = state[EMBEDDING_KEY]
    new_weight = torch.cat([weight[base_rows], weight[[actual_id, placeholder_id]]])
    new_model = SymbolInvForConditionalGeneration(new_config)
    target = new_model.state_dict()
    # Every tensor but the embedding maps one to one: same names, same shapes.
    if set(target) != set(state):
        raise AssertionError(
            f"tensor names differ: only in the source {sorted(set(state) - set(target))}, "
            f"only in the SIT {sorted(set(target) - set(state))}"
        )
    for name, tensor in state.items():
        if name != EMBEDDING_KEY and tensor.shape != target[name].shape:
            raise AssertionError(
                f"{name}: shape {tuple(tensor.shape)} in the source, {tuple(target[name].shape)} in the SIT"
            )
    new_model.load_state_dict({**state, EMBEDDING_KEY: new_weight}, strict=True)
    new_model.train(model.training)
    dropped = [
        name
        for i, name in enumerate(_symbol_names(tokenizer, num_base, rows), start=num_base)
        if i not in (actual_id, placeholder_id)
    ]
    before, after = _count(model), _count(new_model)
    # Nothing added, nothing dropped but the other symbols' rows.
    if before - after != len(dropped) * config.d_model:
        raise AssertionError(f"parameter count {before:,} -> {after:,} is not the source minus {len(dropped)} rows")
    report = ConversionReport(
        kind="family",
        source=source,
        source_model_type=f"symbolinv/{config.embedding_type}",
        actual=actual,
        placeholder=placeholder,
        actual_source_id=actual_id,
        placeholder_source_id=placeholder_id,
        parameters_before=before,
        parameters_after=after,
        base_tokens=len(base_rows),
        dropped_symbols=dropped,
        notes=["fine-tune before use: the placeholder row has not yet learned to stand for 'another symbol'"],
    )
    return new_model, new_tokenizer, report


def _conversion_card(report: ConversionReport, source: str) -> str:
    return render_card("conversion", source=source, summary=report.summary())


def convert_checkpoint(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    actual: str = "a",
    placeholder: str = "b",
    symbols: str | None = None,
    log: Callable[[str], Any] | None = print,
) -> ConversionReport:
    """Convert the checkpoint at ``source`` and save the result (model, tokenizer, card) to ``destination``.

    A fixed-embedding ``symbolinv`` checkpoint becomes a SIT; any other encoder-decoder
    ``AutoModelForSeq2SeqLM`` checkpoint becomes a per-stream wrapper. The destination is written
    atomically (an interrupted conversion leaves no half-written folder).
    """
    from transformers import AutoConfig, AutoTokenizer

    from ...utils.files import save_model_folder

    source = str(source)
    if Path(destination).resolve() == Path(source).resolve():
        raise ValueError("the destination is the source checkpoint; write the converted model elsewhere")
    try:
        config = AutoConfig.from_pretrained(source)
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read a model config from {source!r}: {error}") from error
    if config.model_type == "symbolinv":
        from .modeling_symbolinv import SymbolInvForConditionalGeneration

        model = SymbolInvForConditionalGeneration.from_pretrained(source)
        tokenizer = AutoTokenizer.from_pretrained(source)
        converted, new_tokenizer, report = convert_family_model(
            model, tokenizer, actual, placeholder, symbols, source=source
        )
    else:
        if not getattr(config, "is_encoder_decoder", False):
            raise ValueError(
                f"{source!r} is a {config.model_type!r} checkpoint, which is not an encoder-decoder: "
                "conversion needs an AutoModelForSeq2SeqLM checkpoint (BART, Marian, M2M100, T5, ...) "
                "or a fixed-embedding symbolinv model"
            )
        from ..symbolinv_wrapper.modeling_symbolinv_wrapper import SymbolInvWrapperForConditionalGeneration

        tokenizer = AutoTokenizer.from_pretrained(source)
        converted, new_tokenizer = SymbolInvWrapperForConditionalGeneration.from_seq2seq(
            source, tokenizer, actual=actual, placeholder=placeholder, symbols=symbols
        )
        wrapper_config = converted.config
        parameters = _count(converted)
        report = ConversionReport(
            kind="wrapper",
            source=source,
            source_model_type=config.model_type,
            actual=actual,
            placeholder=placeholder,
            actual_source_id=wrapper_config.actual_token_id,
            placeholder_source_id=wrapper_config.placeholder_token_id,
            parameters_before=parameters,
            parameters_after=parameters,
            symbol_count=len(wrapper_config.symbol_token_ids),
            notes=["only per-stream attention (EP-DP-CP): aggregated modes would need layers the source lacks"],
        )
    if log is not None:
        log(report.summary())
    save_model_folder(converted, new_tokenizer, destination, card=_conversion_card(report, source))
    if log is not None:
        log(f"saved to {destination}")
    return report


__all__ = ["ConversionReport", "convert_checkpoint", "convert_family_model"]
