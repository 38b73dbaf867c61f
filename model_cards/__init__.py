"""Model card templates, filled in by ``symbolinv train`` and ``symbolinv evaluate`` (see ``template.md``)."""

from importlib.resources import files


def template() -> str:
    """The model card template (Markdown with ``{placeholders}``)."""
    return files(__name__).joinpath("template.md").read_text(encoding="utf-8")
