"""Model card templates (Markdown with ``{placeholders}``), filled in by ``hf_symbolinv.model_card.render_card``:
``template.md`` (trained and evaluated SITs), ``folnet.md`` (trained FOLNets), ``dte.md`` (trained tree
transducers), ``demo.md`` (the demo's model), ``conversion.md`` (converted checkpoints)."""

from importlib.resources import files


def template(name: str = "template") -> str:
    """The text of ``<name>.md``."""
    path = files(__name__).joinpath(f"{name}.md")
    if not path.is_file():
        raise ValueError(f"no model card template {name!r} in model_cards/")
    return path.read_text(encoding="utf-8")
