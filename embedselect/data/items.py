"""The fields of reference data and how its images are opened (:class:`ReferenceItems`), below the modules that build
(:mod:`embedselect.data.loaders`) and dedupe (:mod:`embedselect.data.duplicates`) it; :class:`~embedselect.data.ReferenceData`
adds the checks, summaries and entry points on top."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

import numpy as np

from embedselect._util.names import storable_name
from embedselect.data.load_report import LoadReport
from embedselect._util.images import as_mode
from embedselect.data.readers import ImageInvalid, decode_image
from embedselect.errors import ConfigError, DecodeError


@dataclass(frozen=True, eq=False, repr=False)
class ReferenceItems:
    """The fields of reference data (documented on :class:`~embedselect.data.ReferenceData`, the class to use) and
    :meth:`load_images`: what the loaders build and the duplicate rules read."""

    modality: Literal["text", "image"]
    items: tuple[Any, ...]
    labels: np.ndarray | None
    ids: tuple[str, ...]
    fingerprint: str
    source: str
    report: LoadReport
    _sample_settings: dict[str, Any] = field(default_factory=dict)
    id_column: str | None = None
    _positions: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        # the source is stored, shown and written to reports: a file name's non-UTF-8 bytes become \xNN escapes
        object.__setattr__(self, "source", storable_name(self.source))

    def __len__(self) -> int:
        return len(self.items)

    def load_images(self, indices: Iterable[int] | None = None) -> list[Any]:
        """Open images as RGB ``PIL.Image.Image`` objects (fully loaded, files closed).

        Args:
            indices: positions in ``items`` (``None``: all items).

        Raises:
            ConfigError: the data are texts.
            DecodeError: a file changed or vanished since loading.
        """
        if self.modality != "image":
            raise ConfigError(f"load_images() needs image data; this reference data holds {self.modality}s")
        idx = range(len(self)) if indices is None else [int(i) for i in indices]
        out = []
        for i in idx:
            path = self.items[i]
            try:
                out.append(as_mode(decode_image(path.read_bytes()), "RGB"))
            except OSError as exc:
                raise DecodeError(
                    f"image {self.ids[i]} ({path}) can no longer be read: {exc}. Was it changed or moved "
                    "after loading? Load the reference data again."
                ) from exc
            except ImageInvalid as exc:
                raise DecodeError(
                    f"image {self.ids[i]} ({path}) can no longer be decoded: {exc}. Load the reference data again."
                ) from exc
        return out
