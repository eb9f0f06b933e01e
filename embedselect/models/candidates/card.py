"""What a model folder's card says it was made from: the ``base_model`` of its ``README.md`` front matter and whether
it is a distilled or quantised copy of that model, read as untrusted text.

A derived copy that the vectors cannot show (a model2vec static model is a PCA of its teacher's token embeddings,
not a coordinate-wise function of the teacher's vectors: :mod:`embedselect.metrics.copies`) still says what it is on
its card: model2vec writes ``library_name: model2vec`` and ``base_model: <teacher>``, and the hub's cards carry
``base_model_relation: quantized`` for quantisations. A fine-tune, an adapter or a merge also names a
``base_model`` but is a new model that may beat its base: only ``"distilled"`` and ``"quantized"`` count as copies.

Hub snapshots include ``README.md`` (:func:`embedselect.models.hub.files.select_files`); a local folder's card is read only
when it is a regular file inside the folder (a link out of the folder is never followed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embedselect._fs.inside import real_inside

MAX_CARD_BYTES = 64 * 1024
"""Bytes of ``README.md`` read: the YAML front matter comes first, and a card is untrusted input."""
MAX_BASE_MODELS = 8
MAX_NAME_CHARS = 300
DISTILLED_LIBRARIES = frozenset({"model2vec"})
DISTILLED_TAGS = frozenset({"model2vec", "static-embeddings"})
COPY_RELATIONS = frozenset({"distilled", "quantized"})
"""Card relations that make a candidate a copy of its base model (never ranked above it)."""


@dataclass(frozen=True)
class CardOrigin:
    """What a model card declares about the model's origin.

    Attributes:
        base_models: the ``base_model`` entries (hub ids or folder names, as written), at most
            :data:`MAX_BASE_MODELS`.
        relation: ``"distilled"`` (a model2vec / static-embeddings card), ``"quantized"`` (``base_model_relation:
            quantized``), or None (a fine-tune, adapter or merge, or nothing said).
    """

    base_models: tuple[str, ...]
    relation: str | None


def _front_matter(text: str) -> dict[str, Any] | None:
    import yaml

    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return None
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def _strings(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [s.strip() for s in items if isinstance(s, str) and s.strip() and len(s) <= MAX_NAME_CHARS]


def parse_card(text: str) -> CardOrigin | None:
    """The origin a card's YAML front matter declares, or None when it names no ``base_model`` (or has no front
    matter, or front matter that is not a YAML mapping).

    Args:
        text: the start of a ``README.md`` (untrusted).
    """
    data = _front_matter(text)
    if data is None:
        return None
    bases = tuple(dict.fromkeys(_strings(data.get("base_model"))))[:MAX_BASE_MODELS]
    if not bases:
        return None
    declared = data.get("base_model_relation")
    tags = {t.lower() for t in _strings(data.get("tags"))}
    library = str(data.get("library_name") or "").strip().lower()
    relation: str | None
    if isinstance(declared, str) and declared.strip():
        relation = "quantized" if declared.strip().lower() == "quantized" else None
    elif library in DISTILLED_LIBRARIES or tags & DISTILLED_TAGS:
        relation = "distilled"
    else:
        relation = None
    return CardOrigin(bases, relation)


def card_origin(folder: Path | None, *, within: Path | None = None) -> CardOrigin | None:
    """:func:`parse_card` of ``folder/README.md``, or None when there is none, it cannot be read, or it is a link
    that leads out of ``within`` (default: ``folder``; a hub snapshot passes its repo's cache folder, whose blobs
    the snapshot links to)."""
    if folder is None:
        return None
    path = Path(folder) / "README.md"
    try:
        real = real_inside(path, within if within is not None else folder)
        if real is None or not real.is_file():
            return None
        with open(real, "rb") as fh:
            head = fh.read(MAX_CARD_BYTES)
    except OSError:
        return None
    return parse_card(head.decode("utf-8", errors="replace"))


def model_aliases(model_id: str, local_dir: Path | None) -> tuple[str, ...]:
    """The lower-case names a card's ``base_model`` may use for this model: a hub id and its last part
    (``org/name``, ``name``), or a local folder's absolute path and its name."""
    if model_id.startswith("local:") and local_dir is not None:
        full = str(Path(local_dir).absolute())
        return tuple(dict.fromkeys(s.lower() for s in (full, Path(full).name) if s))
    return tuple(dict.fromkeys(s.lower() for s in (model_id, model_id.rsplit("/", 1)[-1]) if s))


__all__ = ["COPY_RELATIONS", "CardOrigin", "card_origin", "model_aliases", "parse_card"]
