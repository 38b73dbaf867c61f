"""One model-card writer, fed by the templates in model_cards/."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from hf_symbolinv.utils.model_card import render_card


@pytest.mark.parametrize("name", ["template", "demo", "conversion", "folnet", "dte"])
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


def test_a_dte_card_says_what_the_model_is() -> None:
    from hf_symbolinv.models.dte import DTEConfig
    from hf_symbolinv.routes.common import fill_model_card

    config = DTEConfig(controller="dte", termination="sluggish", top_k=4, max_depth=5, num_steps=20)
    card = fill_model_card(config, task="tree", model_ref="me/dte", parameters=1234567)
    assert card.startswith("---\nlibrary_name: transformers")
    assert "# Terminating Differentiable Tree Experts: tree" in card
    assert "| controller | mixture of 16 experts (sparse, top 4) and a router |" in card
    assert "| tree depth (root = 0) / positions | 5 / 63 |" in card
    assert "| parameters | 1,234,567 |" in card
    assert 'pipeline("tree-transduction", model="me/dte", trust_remote_code=True)' in card
    assert not re.search(r"\{[a-z_]+\}", card)
