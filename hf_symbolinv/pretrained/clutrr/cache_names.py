"""The key/value cache's name in transformers' interfaces, on both sides of its renaming.

transformers 5.24 renamed ``past_key_values`` to ``cache`` everywhere: the field of the model outputs, the
keyword ``generate`` passes to ``prepare_inputs_for_generation`` and ``forward``, and the key it reads the
updated cache back from. A ``ModelOutput`` with a field called ``past_key_values`` cannot even be built there
(its ``__init__`` renames the keyword to ``cache``), while before 5.24 ``generate`` only reads
``past_key_values``. A family's Hub folder is loaded with either version, so its models name the cache through
this module only:

* output dataclasses declare the field as ``cache`` under :func:`cache_field`, which gives it the installed
  transformers' name (``CACHE_NAME``); they are built with ``**cache_keyword(cache)``;
* forwards take both ``cache=`` and ``past_key_values=`` and keep one with :func:`given_cache`;
* code reads an output's cache with :func:`output_cache`, never through ``.past_key_values`` (deprecated from
  5.24 on) nor ``.cache`` (absent before).

Nothing here is specific to one family: other families copy this module.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from transformers.cache_utils import Cache
from transformers.modeling_outputs import Seq2SeqLMOutput

#: Both names the cache has had: forwards accept either, and lists transformers matches by name hold both.
CACHE_NAMES = ("cache", "past_key_values")

#: The cache's name in the installed transformers: ``cache`` from 5.24 on, ``past_key_values`` before.
CACHE_NAME = "cache" if "cache" in {field.name for field in dataclasses.fields(Seq2SeqLMOutput)} else "past_key_values"

OutputClass = TypeVar("OutputClass", bound=type)


def cache_field(cls: OutputClass) -> OutputClass:
    """Class decorator, placed under ``@dataclass``: the field declared as ``cache`` gets the name ``CACHE_NAME``.

    The field keeps its place, so ``to_tuple()`` is the same with either version.
    """
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    if "cache" not in annotations:
        raise TypeError(f"{cls.__name__} declares no field 'cache'")
    if CACHE_NAME != "cache":
        cls.__annotations__ = {(CACHE_NAME if name == "cache" else name): kind for name, kind in annotations.items()}
        setattr(cls, CACHE_NAME, cls.__dict__.get("cache"))
        delattr(cls, "cache")
    return cls


def cache_keyword(cache: Cache | None) -> dict[str, Cache | None]:
    """``{CACHE_NAME: cache}``: the cache as a keyword of an output class or of a transformers model's forward."""
    return {CACHE_NAME: cache}


def output_cache(output: Any) -> Cache | None:
    """The cache of a model output (None when it holds none), under the installed transformers' name."""
    return getattr(output, CACHE_NAME, None)


def given_cache(cache: Cache | None, past_key_values: Cache | None) -> Cache | None:
    """The cache a forward was given, as ``cache=`` (transformers 5.24 on) or ``past_key_values=`` (before)."""
    if past_key_values is None:
        return cache
    if cache is not None and cache is not past_key_values:
        raise ValueError("cache and past_key_values are two names of the same argument: give only one of them")
    return past_key_values
