"""DTEConfig validation names the bad field; a config survives a save/load round trip."""

import pytest

from hf_symbolinv.models.dte import DTEConfig


def test_defaults_and_round_trip(tmp_path):
    config = DTEConfig(controller="dtm", termination="sluggish", num_steps=5, top_k=4)
    assert config.model_type == "dte"
    assert config.num_experts == 16
    config.save_pretrained(tmp_path)
    loaded = DTEConfig.from_pretrained(tmp_path)
    assert (loaded.controller, loaded.termination, loaded.num_steps, loaded.top_k) == ("dtm", "sluggish", 5, 4)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"controller": "lstm"}, "controller"),
        ({"termination": "never"}, "termination"),
        ({"top_k": 17}, "top_k"),
        ({"top_k": 0}, "top_k"),
        ({"max_depth": 0}, "max_depth"),
        ({"d_model": 30, "num_heads": 4}, "num_heads"),
        ({"num_steps": "many"}, "num_steps"),
        ({"num_experts": True}, "num_experts"),
        ({"dropout": 1.5}, "dropout"),
        ({"confidence_threshold": 0.0}, "confidence_threshold"),
    ],
)
def test_bad_field_is_named(kwargs, field):
    with pytest.raises(ValueError, match=rf"DTEConfig\.{field}:"):
        DTEConfig(**kwargs)
