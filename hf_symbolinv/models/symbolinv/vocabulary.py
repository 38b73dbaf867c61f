# Copied from hf_symbolinv.tasks.vocabulary
"""The task vocabularies: the base (non-interchangeable) tokens of each task, in id order.

Defined in ``hf_symbolinv.tasks.vocabulary`` beside the tasks that name them (``Task.vocabulary``). The SIT's
folder holds a checked copy that its tokenizer and configuration import as a sibling (``save_pretrained`` copies
it next to them), so this module imports only the standard library.

Ids: base token j has id j (0 <= j < V_n); symbol slot i has id V_n + i.
"""

from __future__ import annotations

from dataclasses import dataclass

PAD_TOKEN = "<pad>"
EOS_TOKEN = "<eos>"
START_TOKEN = "<start>"
SPECIAL_TOKENS = (PAD_TOKEN, EOS_TOKEN, START_TOKEN)
PAD_ID, EOS_ID, START_ID = 0, 1, 2


@dataclass(frozen=True)
class Vocabulary:
    """A task's base tokens in id order and the arity of each in Polish notation.

    The arities drive the tree positional encoding: an operator of arity 1 has one (left)
    child, of arity 2 a left and a right child. Tokens not listed, and symbols, have arity 0.
    """

    name: str
    base_tokens: tuple[str, ...]
    arities: tuple[tuple[str, int], ...] = ()

    @property
    def num_base_tokens(self) -> int:
        return len(self.base_tokens)

    def arity_list(self) -> list[int]:
        """Arity per base-token id."""
        arity = dict(self.arities)
        return [arity.get(token, 0) for token in self.base_tokens]


VOCABULARIES: dict[str, Vocabulary] = {
    # LTL formulas in Polish notation and symbolic lasso traces (`a;&ab;{b}`).
    "ltl": Vocabulary(
        "ltl",
        SPECIAL_TOKENS + ("0", "1", "!", "&", "|", ";", "{", "}", "U", "X"),
        (("!", 1), ("X", 1), ("&", 2), ("|", 2), ("U", 2)),
    ),
    # Propositional formulas in Polish notation (`=` is <->, `^` is xor) and assignments `a1b0`.
    "prop": Vocabulary(
        "prop",
        SPECIAL_TOKENS + ("0", "1", "!", "&", "|", "=", "^"),
        (("!", 1), ("&", 2), ("|", 2), ("=", 2), ("^", 2)),
    ),
    # Copy task: every character is a symbol, only the special tokens are base tokens.
    "copy": Vocabulary("copy", SPECIAL_TOKENS),
    # Kinship stories `a father b , b sister c ? a c` -> `aunt`: whitespace-separated tokens, the people are
    # symbols; relation words and punctuation are base tokens (no tree structure: every arity is 0).
    "kinship": Vocabulary(
        "kinship",
        SPECIAL_TOKENS
        + (",", "?")
        + ("father", "mother", "son", "daughter", "husband", "wife", "brother", "sister")
        + ("grandfather", "grandmother", "grandson", "granddaughter", "uncle", "aunt", "nephew", "niece")
        + ("father-in-law", "mother-in-law", "son-in-law", "daughter-in-law", "brother-in-law", "sister-in-law"),
    ),
}
# CLUTRR stories in their symbolic form (`b grandson e , e brother h ? b h` -> `grandson`): the kinship tokens, a
# vocabulary of its own so that a model's config names the task it answers (facts may use any relation word).
VOCABULARIES["clutrr"] = Vocabulary("clutrr", VOCABULARIES["kinship"].base_tokens)


def get_vocabulary(name: str) -> Vocabulary:
    try:
        return VOCABULARIES[name]
    except KeyError:
        raise ValueError(f"unknown vocabulary {name!r}; choose one of {sorted(VOCABULARIES)}") from None
