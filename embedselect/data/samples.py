"""The bundled sample data sets (offline demo): where their files are."""

from __future__ import annotations

from pathlib import Path

from embedselect.errors import ConfigError


def sample_path(name: str = "texts") -> Path:
    """Path of a bundled sample data set (offline demo).

    ``"texts"``: ``texts.csv`` with columns ``text,label`` — 240 short English sentences, 40 for each of six
    topics (sports, cooking, finance, technology, health, travel).

    Raises:
        ConfigError: an unknown sample name (the message lists the available ones).
    """
    folder = Path(__file__).parent.parent / "samples"
    available = sorted(p.stem for p in folder.glob("*.csv"))
    path = folder / f"{name}.csv"
    if name not in available or not path.is_file():
        raise ConfigError(f"no bundled sample named {name!r}; available: {', '.join(available) or 'none'}")
    return path


