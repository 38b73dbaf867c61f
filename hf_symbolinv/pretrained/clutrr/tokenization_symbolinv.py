"""Tokenizer for symbol-invariant transformers on logic tasks (model_type ``symbolinv``).

Ids: base token j of the task vocabulary has id j; symbol slot i has id ``V_n + i``. Which names are
symbols, and which slot each takes in an example, is decided by :class:`SymbolRule` (``symbols.py``).
Slots are per example, so the string -> id mapping of a symbol name depends on its context; this is
why the encoding entry points (``__call__`` / ``_encode_plus``) lex whole examples instead of going
through the context-free ``tokenize`` -> ``convert_tokens_to_ids`` path of ``PreTrainedTokenizer``.

Only sibling relative imports here: ``save_pretrained`` copies this file, ``symbols.py`` and
``vocabulary.py`` flat next to the weights, where ``hf_symbolinv`` is not installed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from transformers import BatchEncoding, PreTrainedTokenizer
from transformers.utils import PaddingStrategy, to_py_obj

from .symbols import LETTERS, SymbolRule
from .vocabulary import (
    EOS_ID,
    EOS_TOKEN,
    PAD_ID,
    PAD_TOKEN,
    SPECIAL_TOKENS,
    START_ID,
    START_TOKEN,
    Vocabulary,
    get_vocabulary,
)

#: Label value ignored by the loss; decoding drops it instead of failing on it.
IGNORE_INDEX = -100

_WORD = re.compile(r"\S+")

# One lexed token: (string, position in the input, is it a symbol).
_Lexeme = tuple[str, int, bool]


def slot_token(slot: int) -> str:
    """Vocabulary name of a symbol slot: letters for slots 0..25 (the papers' symbols), else ``<sym{i}>``."""
    return LETTERS[slot] if slot < len(LETTERS) else f"<sym{slot}>"


def _coerce_rule(symbols: Any, vocabulary: str) -> SymbolRule:
    """Accept None, a SymbolRule, its ``to_dict`` form, a regex string or an iterable of names."""
    if symbols is None:
        # The copy task has no operators: every character is an interchangeable symbol.
        rule = SymbolRule(pattern=r"\S") if vocabulary == "copy" else SymbolRule()
    elif isinstance(symbols, SymbolRule):
        rule = symbols
    elif type(symbols).__name__ == "SymbolRule":  # the package's own copy (hf_symbolinv.SymbolRule)
        rule = SymbolRule.from_dict(symbols.to_dict())
    elif isinstance(symbols, Mapping):
        rule = SymbolRule.from_dict(dict(symbols))
    elif isinstance(symbols, str):
        rule = SymbolRule(pattern=symbols)
    elif isinstance(symbols, Iterable):
        rule = SymbolRule(names=list(symbols))
    else:
        raise TypeError(f"symbols must be None, a regex string, an iterable of names or a SymbolRule, got {symbols!r}")
    if rule.pattern is None and not rule.names:
        # SymbolRule.to_dict cannot distinguish this from "default rule", so it would not round-trip.
        raise ValueError("the symbol rule has neither a pattern nor any names, so nothing could be a symbol")
    return rule


class SymbolInvTokenizer(PreTrainedTokenizer):
    """Tokenizer whose symbols (atomic propositions, variable names) map to per-example slots.

    Encoding returns ``input_ids`` (EOS appended, no BOS), ``attention_mask`` and ``symbol_mask`` (1 on
    symbol tokens); with ``text_target`` also ``labels``, whose symbols share the input's slots. Pass
    ``return_symbol_names=True`` to get, per example, the dict slot -> name needed to decode back to
    the caller's names (``decode(..., symbol_names=...)``).
    """

    model_input_names: ClassVar[list[str]] = ["input_ids", "attention_mask", "symbol_mask"]
    vocab_files_names: ClassVar[dict[str, str]] = {}  # the vocabulary is code (vocabulary.py), not a file

    def __init__(
        self,
        vocabulary: str = "ltl",
        symbol_rule: SymbolRule | Mapping[str, Any] | str | Iterable[str] | None = None,
        max_symbols: int = 64,
        **kwargs: Any,
    ) -> None:
        if not isinstance(max_symbols, int) or isinstance(max_symbols, bool) or max_symbols < 1:
            raise ValueError(f"max_symbols must be a positive integer, got {max_symbols!r}")
        vocab = get_vocabulary(vocabulary)  # raises the ValueError listing the presets
        if vocab.base_tokens[: len(SPECIAL_TOKENS)] != SPECIAL_TOKENS:
            raise ValueError(f"vocabulary {vocabulary!r} must start with {SPECIAL_TOKENS}")
        # Set before super().__init__, which already calls get_vocab() to register the special tokens.
        # (Attribute names differ from the init kwargs on purpose: save_pretrained would otherwise
        # serialize these objects instead of the JSON-friendly kwargs.)
        self.task_vocabulary: Vocabulary = vocab
        self.rule: SymbolRule = _coerce_rule(symbol_rule, vocabulary)
        self.max_symbols: int = max_symbols
        self._base_ids: dict[str, int] = {token: i for i, token in enumerate(vocab.base_tokens)}
        # Base tokens by decreasing length: greedy scanning takes the longest base token first.
        self._base_longest_first = sorted(vocab.base_tokens, key=len, reverse=True)
        self._vocab: dict[str, int] = dict(self._base_ids)
        for slot in range(max_symbols):
            name = slot_token(slot)
            if name in self._vocab:
                raise ValueError(f"slot name {name!r} collides with a base token of {vocabulary!r}")
            self._vocab[name] = vocab.num_base_tokens + slot

        kwargs.setdefault("pad_token", PAD_TOKEN)
        kwargs.setdefault("eos_token", EOS_TOKEN)
        kwargs.setdefault("bos_token", START_TOKEN)  # the decoder start token
        super().__init__(
            vocabulary=vocabulary,
            symbol_rule=self.rule.to_dict(),
            max_symbols=max_symbols,
            **kwargs,
        )
        if (self.pad_token_id, self.eos_token_id, self.bos_token_id) != (PAD_ID, EOS_ID, START_ID):
            raise ValueError("pad/eos/bos tokens must be the vocabulary's <pad>, <eos> and <start>")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Any, *args: Any, **kwargs: Any) -> SymbolInvTokenizer:
        """``PreTrainedTokenizer.from_pretrained``; a local folder without ``tokenizer_config.json`` is refused:
        the defaults would silently give the LTL vocabulary whatever the model's task."""
        folder = Path(str(pretrained_model_name_or_path))
        if folder.is_dir() and not (folder / "tokenizer_config.json").is_file() and "vocabulary" not in kwargs:
            raise ValueError(
                f"{folder} has no tokenizer_config.json: which task vocabulary the model uses is unknown. Save the "
                "tokenizer with the model (tokenizer.save_pretrained), or build it with "
                "SymbolInvTokenizer.from_preset(config.vocabulary)"
            )
        return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)

    def check_matches(self, config: Any) -> None:
        """Refuse a model config whose vocabulary differs from this tokenizer's, naming both."""
        theirs = (getattr(config, "vocabulary", None), getattr(config, "num_base_tokens", None))
        ours = (self.task_vocabulary.name, self.num_base_tokens)
        same_vocabulary = theirs[0] is None or theirs == ours
        # Every id, in order: the base tokens (fixed by the vocabulary's name) and as many symbol slots as the model.
        if not same_vocabulary or getattr(config, "vocab_size", self.vocab_size) != self.vocab_size:
            raise ValueError(
                f"the tokenizer ({ours[0]!r} vocabulary: {ours[1]} base tokens, {self.max_symbols} symbol slots) does "
                f"not match the model ({theirs[0]!r} vocabulary: {theirs[1]} base tokens, vocab_size "
                f"{getattr(config, 'vocab_size', '?')})"
            )

    @classmethod
    def from_preset(
        cls,
        preset: str,
        symbols: SymbolRule | str | Iterable[str] | None = None,
        max_symbols: int = 64,
        **kwargs: Any,
    ) -> SymbolInvTokenizer:
        """Tokenizer for a task vocabulary (``"ltl"``, ``"prop"`` or ``"copy"``).

        ``symbols``: None (single lowercase letters; every non-whitespace character for ``"copy"``), a
        regex that whole symbol names match, an iterable of names, or a :class:`SymbolRule`.
        """
        return cls(vocabulary=preset, symbol_rule=symbols, max_symbols=max_symbols, **kwargs)

    # ----------------------------------------------------------------------------------------------
    # Vocabulary
    # ----------------------------------------------------------------------------------------------

    @property
    def num_base_tokens(self) -> int:
        """V_n: the number of base tokens; symbol slot i has id ``num_base_tokens + i``."""
        return self.task_vocabulary.num_base_tokens

    @property
    def vocab_size(self) -> int:
        return self.num_base_tokens + self.max_symbols

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def _convert_token_to_id(self, token: str) -> int:
        try:
            return self._vocab[token]
        except KeyError:
            # Symbol names other than letters have no fixed id: their slot depends on the example.
            raise ValueError(
                f"token {token!r} is not in the vocabulary; symbol names get slots per example, "
                "so encode whole texts with the tokenizer's __call__"
            ) from None

    def _convert_id_to_token(self, index: int) -> str:
        if 0 <= index < self.num_base_tokens:
            return self.task_vocabulary.base_tokens[index]
        if self.num_base_tokens <= index < self.vocab_size:
            return slot_token(index - self.num_base_tokens)
        raise ValueError(f"id {index} is outside the vocabulary (size {self.vocab_size})")

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        # Nothing to write: the preset name and the symbol rule live in tokenizer_config.json.
        return ()

    # ----------------------------------------------------------------------------------------------
    # Lexing and slot assignment
    # ----------------------------------------------------------------------------------------------

    def _unknown(self, token: str, position: int, source: object) -> ValueError:
        return ValueError(
            f"unknown token {token!r} at position {position} in {source!r} (not a base token of the "
            f"{self.task_vocabulary.name!r} vocabulary and not a symbol under {self.rule!r})"
        )

    def _classify(self, token: str, position: int, source: object) -> _Lexeme:
        """A whole token: base token (which is never a symbol), symbol, or an error."""
        if token in self._base_ids:
            return (token, position, False)
        if self.rule.is_symbol(token):
            return (token, position, True)
        raise self._unknown(token, position, source)

    def _lex(self, text: str) -> list[_Lexeme]:
        """Split one input string into tokens, marking the symbols."""
        if not isinstance(text, str):
            raise TypeError(f"expected a string, got {type(text).__name__}: {text!r}")
        if not text.strip():
            raise ValueError(f"empty input {text!r}: nothing to tokenize")
        if any(ch.isspace() for ch in text):
            # Explicit segmentation wins: each whitespace-separated piece is one token.
            return [self._classify(m.group(), m.start(), text) for m in _WORD.finditer(text)]
        lexemes: list[_Lexeme] = []
        pos = 0
        while pos < len(text):
            special = next((s for s in SPECIAL_TOKENS if text.startswith(s, pos)), None)
            if special is not None:
                lexemes.append((special, pos, False))
                pos += len(special)
                continue
            base_len = next((len(t) for t in self._base_longest_first if text.startswith(t, pos)), 0)
            symbol_len = self.rule.match_at(text, pos)
            if symbol_len > base_len and text[pos : pos + symbol_len] not in self._base_ids:
                lexemes.append((text[pos : pos + symbol_len], pos, True))
                pos += symbol_len
            elif base_len > 0:  # ties go to the base token
                lexemes.append((text[pos : pos + base_len], pos, False))
                pos += base_len
            else:
                raise self._unknown(text[pos], pos, text)
        return lexemes

    def _lex_example(self, example: str | Sequence[str]) -> list[_Lexeme]:
        """A string, or a pre-tokenized list of token strings (``is_split_into_words=True``)."""
        if isinstance(example, str):
            return self._lex(example)
        tokens = list(example)
        if not tokens:
            raise ValueError(f"empty input {tokens!r}: nothing to tokenize")
        return [self._classify(token, i, tokens) for i, token in enumerate(tokens)]

    def _assign(self, lexed: Sequence[list[_Lexeme]], source: object) -> dict[str, int]:
        """Slots for one example; ``lexed`` is the input first, then the target (shared slots)."""
        names = list(dict.fromkeys(tok for part in lexed for tok, _, is_sym in part if is_sym))
        if len(names) > self.max_symbols:
            raise ValueError(
                f"{len(names)} distinct symbols in one example but max_symbols={self.max_symbols} "
                f"(symbols {names[:8]}{'...' if len(names) > 8 else ''} in {source!r})"
            )
        slots = self.rule.assign_slots(names)
        for name, slot in slots.items():
            if slot >= self.max_symbols:
                raise ValueError(
                    f"symbol {name!r} has the fixed slot {slot} but max_symbols={self.max_symbols} (in {source!r})"
                )
        return slots

    def _to_ids(self, lexed: list[_Lexeme], slots: Mapping[str, int]) -> list[int]:
        n = self.num_base_tokens
        return [n + slots[tok] if is_sym else self._base_ids[tok] for tok, _, is_sym in lexed]

    @staticmethod
    def _is_ids(example: Any) -> bool:
        return isinstance(example, (list, tuple)) and bool(example) and not isinstance(example[0], str)

    def _encode_example(self, source: Any, target: Any = None) -> tuple[Any, Any, dict[int, str]]:
        """Ids of one (input, target) pair with shared slots, and the slot -> name map.

        Slots are assigned over the input's names first, then the target's. Already-encoded
        sequences (lists of ints) pass through unchanged.
        """
        sides = (source, target)
        lexed = [None if x is None or self._is_ids(x) else self._lex_example(x) for x in sides]
        slots = self._assign([part for part in lexed if part is not None], source if source is not None else target)
        ids = [
            self._to_ids(part, slots) if part is not None else (None if x is None else list(x))
            for part, x in zip(lexed, sides)
        ]
        names = {slot: name for name, slot in sorted(slots.items(), key=lambda item: item[1])}
        return ids[0], ids[1], names

    @staticmethod
    def _split_batch(text: Any, is_split_into_words: bool) -> tuple[list[Any], bool]:
        """The examples of ``text`` and whether it was a batch (same conventions as the base class)."""
        if isinstance(text, str):
            return [text], False
        if not isinstance(text, (list, tuple)):
            text = to_py_obj(text)  # tensors / arrays of ids
            if not isinstance(text, list):
                raise TypeError(f"expected a string, a list of strings or ids, got {type(text).__name__}")
        if not text:
            raise ValueError("empty input []: no examples to encode")
        first = text[0]
        if isinstance(first, str):
            return ([list(text)], False) if is_split_into_words else (list(text), True)
        if isinstance(first, (list, tuple)):
            return list(text), True
        return [list(text)], False  # a single sequence of ids

    def tokenize(self, text: str, **kwargs: Any) -> list[str]:
        """The token strings of ``text`` (symbol names as written; their ids depend on the example)."""
        return [tok for tok, _, _ in self._lex(text)]

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        return self.tokenize(text)

    # ----------------------------------------------------------------------------------------------
    # Encoding
    # ----------------------------------------------------------------------------------------------

    def __call__(
        self,
        text: Any = None,
        text_pair: Any = None,
        text_target: Any = None,
        text_pair_target: Any = None,
        *,
        return_symbol_names: bool = False,
        **kwargs: Any,
    ) -> BatchEncoding:
        """Encode ``text`` (and ``text_target`` into ``labels``); a string or a list of strings.

        The base ``__call__`` encodes inputs and targets independently, which would give a name
        different slots on both sides; so the slots are assigned here per (input, target) pair and
        the base class only sees ids (truncation, EOS, padding, tensors).
        """
        if text_pair is not None or text_pair_target is not None:
            raise ValueError("SymbolInvTokenizer does not support sequence pairs (text_pair / text_pair_target)")
        if text is None and text_target is None:
            raise ValueError("You need to specify either `text` or `text_target`.")
        is_split = bool(kwargs.pop("is_split_into_words", False))
        sources, batched = self._split_batch(text, is_split) if text is not None else (None, None)
        targets, target_batched = self._split_batch(text_target, is_split) if text_target is not None else (None, None)
        if sources is not None and targets is not None and (batched, len(sources)) != (target_batched, len(targets)):
            raise ValueError(
                f"text and text_target must have the same batch structure "
                f"({len(sources)} vs {len(targets)} examples, batched={batched} vs {target_batched})"
            )
        if batched is None:
            batched = target_batched
        count = len(sources if sources is not None else targets)
        source_ids, target_ids, names = [], [], []
        for i in range(count):
            ids, label_ids, example_names = self._encode_example(
                sources[i] if sources is not None else None, targets[i] if targets is not None else None
            )
            source_ids.append(ids)
            target_ids.append(label_ids)
            names.append(example_names)

        def pack(seqs: list[Any]) -> Any:
            return seqs if batched else seqs[0]

        encoding = super().__call__(
            text=pack(source_ids) if text is not None else None,
            text_target=pack(target_ids) if text_target is not None else None,
            **kwargs,
        )
        if return_symbol_names:
            # Added after tensor conversion: a dict per example can't become a tensor.
            encoding["symbol_names"] = pack(names)
        return encoding

    def _encode_plus(self, text: Any, text_pair: Any = None, **kwargs: Any) -> BatchEncoding:
        # Reached directly by `encode` (and by __call__ with ids only): lex strings, then defer.
        if text_pair is not None:
            raise ValueError("SymbolInvTokenizer does not support sequence pairs (text_pair)")
        is_split = bool(kwargs.pop("is_split_into_words", False))
        examples, batched = self._split_batch(text, is_split)
        ids = [self._encode_example(example)[0] for example in examples]
        return super()._encode_plus(ids if batched else ids[0], is_split_into_words=False, **kwargs)

    def build_inputs_with_special_tokens(
        self, token_ids_0: list[int], token_ids_1: list[int] | None = None
    ) -> list[int]:
        # EOS after each sequence, no BOS: the decoder start token is prepended by the model.
        if token_ids_1 is None:
            return token_ids_0 + [self.eos_token_id]
        return token_ids_0 + [self.eos_token_id] + token_ids_1 + [self.eos_token_id]

    def get_special_tokens_mask(
        self,
        token_ids_0: list[int],
        token_ids_1: list[int] | None = None,
        already_has_special_tokens: bool = False,
    ) -> list[int]:
        if already_has_special_tokens:
            return super().get_special_tokens_mask(token_ids_0, token_ids_1, already_has_special_tokens=True)
        if token_ids_1 is None:
            return [0] * len(token_ids_0) + [1]
        return [0] * len(token_ids_0) + [1] + [0] * len(token_ids_1) + [1]

    def _symbol_mask(self, ids: Sequence[int]) -> list[int]:
        # Ids alone decide it: every id >= V_n is a symbol slot (pad, EOS and labels' -100 are not).
        return [int(int(i) >= self.num_base_tokens) for i in ids]

    def prepare_for_model(
        self,
        ids: list[int],
        pair_ids: list[int] | None = None,
        return_tensors: Any = None,
        prepend_batch_axis: bool = False,
        **kwargs: Any,
    ) -> BatchEncoding:
        # The base method only calls `_pad` (which adds symbol_mask) when padding or building an
        # attention mask; add it otherwise too, before the tensor conversion.
        encoding = super().prepare_for_model(ids, pair_ids=pair_ids, return_tensors=None, **kwargs)
        if "symbol_mask" not in encoding:
            encoding["symbol_mask"] = self._symbol_mask(encoding["input_ids"])
        data = dict(encoding)
        if return_tensors is not None:  # the base drops these when tensors are requested
            data.pop("overflowing_tokens", None)
            data.pop("num_truncated_tokens", None)
        return BatchEncoding(data, tensor_type=return_tensors, prepend_batch_axis=prepend_batch_axis)

    # ----------------------------------------------------------------------------------------------
    # Padding
    # ----------------------------------------------------------------------------------------------

    def _pad(
        self,
        encoded_inputs: dict[str, Any] | BatchEncoding,
        max_length: int | None = None,
        padding_strategy: PaddingStrategy = PaddingStrategy.DO_NOT_PAD,
        pad_to_multiple_of: int | None = None,
        padding_side: str | None = None,
        return_attention_mask: bool | None = None,
    ) -> dict:
        # The base `_pad` only knows input_ids / attention_mask / token_type_ids / special_tokens_mask;
        # pad symbol_mask with 0 by the same amount on the same side so it stays aligned.
        main = self.model_input_names[0]
        before = len(encoded_inputs[main])
        mask = encoded_inputs.get("symbol_mask")
        if mask is None and "symbol_mask" in self.model_input_names:
            mask = self._symbol_mask(encoded_inputs[main])  # like the base initializes attention_mask
        encoded_inputs = super()._pad(
            encoded_inputs,
            max_length=max_length,
            padding_strategy=padding_strategy,
            pad_to_multiple_of=pad_to_multiple_of,
            padding_side=padding_side,
            return_attention_mask=return_attention_mask,
        )
        if mask is not None:
            difference = len(encoded_inputs[main]) - before
            side = padding_side if padding_side is not None else self.padding_side
            mask = list(mask)
            encoded_inputs["symbol_mask"] = mask + [0] * difference if side == "right" else [0] * difference + mask
        return encoded_inputs

    def pad(self, encoded_inputs: Any, *args: Any, **kwargs: Any) -> BatchEncoding:
        """``PreTrainedTokenizerBase.pad`` that passes ``symbol_names`` through untouched (no tensors)."""
        names = None
        if isinstance(encoded_inputs, Mapping) and "symbol_names" in encoded_inputs:
            encoded_inputs = dict(encoded_inputs)
            names = encoded_inputs.pop("symbol_names")
        elif (
            isinstance(encoded_inputs, (list, tuple))
            and encoded_inputs
            and isinstance(encoded_inputs[0], Mapping)
            and "symbol_names" in encoded_inputs[0]
        ):
            names = [feature["symbol_names"] for feature in encoded_inputs]
            encoded_inputs = [{k: v for k, v in f.items() if k != "symbol_names"} for f in encoded_inputs]
        padded = super().pad(encoded_inputs, *args, **kwargs)
        if names is not None:
            padded["symbol_names"] = names
        return padded

    # ----------------------------------------------------------------------------------------------
    # Decoding
    # ----------------------------------------------------------------------------------------------

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        # Single-character tokens that this tokenizer reads one by one (the papers' formulas, `a;&ab;{b}`) join
        # unsegmented; anything else (longer names, or names such as `Q` that its rule does not take) is
        # space-separated, so that it lexes back the same way, here and in the logic engine.
        joined = "".join(tokens)
        if all(len(token) == 1 for token in tokens) and self._reads_back(joined, tokens):
            return joined
        return " ".join(tokens)

    def _reads_back(self, text: str, tokens: list[str]) -> bool:
        """Whether unsegmented ``text`` lexes into ``tokens`` again (a rule that takes longer names would read
        ``Q1`` as one name)."""
        try:
            return self._tokenize(text) == tokens
        except ValueError:
            return False

    def _decode(
        self,
        token_ids: int | list[int],
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        symbol_names: Mapping[Any, str] | None = None,
        **kwargs: Any,
    ) -> str:
        ids = [token_ids] if isinstance(token_ids, int) else token_ids
        names = {int(slot): name for slot, name in symbol_names.items()} if symbol_names else {}
        skip = set(self.all_special_ids) if skip_special_tokens else set()
        tokens = []
        for index in map(int, ids):
            if index == IGNORE_INDEX or index in skip:  # -100: masked label positions
                continue
            if index >= self.num_base_tokens and index - self.num_base_tokens in names:
                tokens.append(names[index - self.num_base_tokens])
            else:
                tokens.append(self._convert_id_to_token(index))
        return self.convert_tokens_to_string(tokens)

    def decode(
        self,
        token_ids: Any,
        skip_special_tokens: bool = False,
        symbol_names: Mapping[Any, str] | Sequence[Mapping[Any, str] | None] | None = None,
        **kwargs: Any,
    ) -> str | list[str]:
        """Ids (one sequence or a batch) back to text.

        ``symbol_names`` maps slot -> name (as returned with ``return_symbol_names=True``); for a batch
        give one mapping per row, or a single mapping used for every row. Slots without a name decode
        to ``a``..``z`` (slots 0..25) or ``<sym{i}>``. Label padding (-100) is always dropped.
        """
        ids = to_py_obj(token_ids)
        kwargs.pop("clean_up_tokenization_spaces", None)  # no spaces to clean up
        if isinstance(ids, (list, tuple)) and ids and isinstance(ids[0], (list, tuple)):
            if symbol_names is None or isinstance(symbol_names, Mapping):
                per_row = [symbol_names] * len(ids)
            else:
                per_row = list(symbol_names)
                if len(per_row) != len(ids):
                    raise ValueError(f"got {len(per_row)} symbol_names mappings for {len(ids)} sequences")
            return [
                self._decode(row, skip_special_tokens=skip_special_tokens, symbol_names=names, **kwargs)
                for row, names in zip(ids, per_row)
            ]
        if symbol_names is not None and not isinstance(symbol_names, Mapping):
            per_row = list(symbol_names)
            if len(per_row) != 1:
                raise ValueError(f"got {len(per_row)} symbol_names mappings for a single sequence")
            symbol_names = per_row[0]
        return self._decode(ids, skip_special_tokens=skip_special_tokens, symbol_names=symbol_names, **kwargs)

    def batch_decode(
        self,
        sequences: Any,
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        symbol_names: Sequence[Mapping[Any, str] | None] | Mapping[Any, str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Decode each row; ``symbol_names`` is a list of per-example slot -> name dicts (or one for all)."""
        result = self.decode(sequences, skip_special_tokens=skip_special_tokens, symbol_names=symbol_names, **kwargs)
        return [result] if isinstance(result, str) else result


__all__ = ["IGNORE_INDEX", "SymbolInvTokenizer", "slot_token"]
