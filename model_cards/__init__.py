"""Model card templates (Markdown with ``{placeholders}``), filled in by ``hf_symbolinv.utils.model_card.render_card``:
one per family for its trained models (the family's ``family.py`` names it; ``template.md`` is the SIT's), and
``demo.md`` (the demo's model) and ``conversion.md`` (converted checkpoints)."""

from importlib.resources import files


def template(name: str = "template") -> str:
    """The text of ``<name>.md``."""
    path = files(__name__).joinpath(f"{name}.md")
    if not path.is_file():
        raise ValueError(f"no model card template {name!r} in model_cards/")
    return path.read_text(encoding="utf-8")
