"""One model-card writer, fed by the templates in model_cards/."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from hf_symbolinv.model_card import render_card


@pytest.mark.parametrize("name", ["template", "demo", "conversion", "folnet"])
def test_every_template_fills_completely(name: str) -> None:
    text = files("model_cards").joinpath(f"{name}.md").read_text()
    fields = {re.sub(r"[:!].*", "", field) for field in re.findall(r"\{([^{}]+)\}", text)}
    card = render_card(name, **dict.fromkeys(fields, 7))
    assert card.startswith("---\nlibrary_name: transformers")
    assert not re.search(r"\{[a-z_]+[^{}]*\}", card)  # every placeholder was filled


def test_a_missing_field_or_template_is_named() -> None:
    with pytest.raises(ValueError, match="template 'conversion' needs the field 'summary'"):
        render_card("conversion", source="runs/vanilla")
    with pytest.raises(ValueError, match="no model card template 'nope'"):
        render_card("nope")
