"""The one small protocol every embedding backend implements."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from embedselect._util.arrays import check_embeddings, nonfinite_rows
from embedselect._util.images import as_mode, open_image, too_large
from embedselect._util.kinds import IMAGE, MODALITIES, TEXT  # noqa: F401 - re-exported for the backends


SPEED_ONLY_OPTIONS = frozenset({"batch_size", "num_workers"})
"""Backend options that change how fast vectors are computed, never the vectors themselves: they are not part
of an embedding run's cache key (the same model at another batch size reuses the cached run)."""


API_CALL_OPTIONS = frozenset({"base_url", "key_env", "max_batch_tokens", "concurrency", "max_retries", "timeout",
                              "max_tokens_total"})
"""Options of a hosted-API candidate (:mod:`embedselect.models.backends.openai_api`) that set how it is called, not
what it returns: not part of a cache key (the host of ``base_url`` is, through the model id)."""


def vector_options(options: dict[str, Any] | Any) -> dict[str, Any]:
    """The options of a candidate that change its vectors (``options`` minus :data:`SPEED_ONLY_OPTIONS` and
    :data:`API_CALL_OPTIONS`)."""
    return {k: v for k, v in dict(options).items() if k not in SPEED_ONLY_OPTIONS and k not in API_CALL_OPTIONS}


def check_max_length_value(value: Any, *, modality: str, backend: str) -> int | None:
    """The ``max_length`` option checked before a model is loaded: None when not given, else a whole number >= 1 of
    a text model.

    Raises:
        ConfigError: not a whole number >= 1 (``-5`` reached the tokenizer as an ``OverflowError``), or given to a
            candidate that embeds images (it would change nothing and still be recorded).
    """
    from embedselect.errors import ConfigError

    if value is None:
        return None
    if modality != TEXT:
        raise ConfigError(f"max_length limits the tokens of a text; this {backend} candidate embeds {modality}s, so it "
                          "would change nothing: drop ?max_length")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"max_length must be a whole number of tokens (1 or more), got {value!r}")
    return value


def check_max_length(value: int | None, tokenizer: Any, config: Any) -> int | None:
    """``max_length`` (already through :func:`check_max_length_value`) checked against the loaded tokenizer and model
    config: at least one token of text beyond the special tokens the tokenizer adds (``max_length=1`` or ``0`` left
    the texts whole or empty, and the vectors equal the untruncated model's), at most the model's longest input
    (``model_max_length`` of the tokenizer, ``max_position_embeddings`` of the config).

    Raises:
        ConfigError: outside that range, saying the range.
    """
    from embedselect.errors import ConfigError

    if value is None:
        return None
    special = 0
    count = getattr(tokenizer, "num_special_tokens_to_add", None)
    if callable(count):
        special = int(count(pair=False))
    limits = [int(n) for n in (getattr(tokenizer, "model_max_length", None),
                               getattr(config, "max_position_embeddings", None))
              if isinstance(n, int) and 0 < n < 100_000]
    top = min(limits) if limits else None
    if value <= special or (top is not None and value > top):
        span = f"{special + 1} to {top}" if top is not None else f"{special + 1} or more"
        raise ConfigError(f"max_length={value} would not truncate the texts as asked: this model takes {span} tokens "
                          f"(its tokenizer adds {special} special tokens to every text; its longest input is "
                          f"{top if top is not None else 'not stated'}); choose a value in that range")
    return value


@runtime_checkable
class Embedder(Protocol):
    """A loaded model that turns reference items into vectors.

    Attributes:
        backend: backend name ("sentence-transformers", "timm", "transformers", "tfidf-svd",
            "random-projection", "pixel-pca").
        modality: "text" or "image" — the kind of items :meth:`embed` accepts.
        device: torch device string the model runs on ("cpu", "cuda", "cuda:1").

    A backend that checks its checkpoint's weights (sentence-transformers, transformers, timm) also has
    ``untrained_norms``: :func:`~embedselect.models.backends.weights.check_checkpoint_weights`' count (0: trained).
    """

    backend: str
    modality: str
    device: str

    def settings(self) -> dict[str, Any]:
        """JSON-serialisable settings that change the output (pooling, normalisation, max length,
        image size, seed, dimension...). They are stored with the run in the cache, as its record
        (``embedding_runs.settings``, beside the load's count of untrained weights) that a later run reads back.

        They are not the cache key: a run's key (:func:`embedselect.store.keys.run_key`, built in
        ``pipeline.embedding``) covers the candidate's options as given (``?pooling=cls``), not these. The
        exception is a built-in baseline, whose key holds the ``settings()`` (less ``fit``) of a baseline built
        from the options (:func:`~embedselect.models.backends.baselines.baseline_key_options`, so that a default
        written out shares the key); a fitted baseline also keeps them in its ``fit_state``, and refuses a state
        fitted with other settings."""
        ...

    def embed(
        self, items: Sequence[str] | Sequence[Path], *, batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        """Embed ``items`` (texts, or image file paths) in order.

        Returns:
            float32 array of shape (len(items), dim), row i for item i. Not normalised unless the
            model itself normalises.
        """
        ...


EMBEDDED_ROWS = "embedded_rows"
"""The attribute an embedder may set on the exception its ``embed`` raises when it failed part-way: ``(rows,
vectors)``, the positions (an int array) of the items it had embedded before the failure and their float32 vectors
(len(rows), d). A run keeps them in the cache (:mod:`embedselect.pipeline.chunked`), so that the batches a hosted API
answered (and billed) are not sent again by the next run (:class:`~embedselect.models.backends.openai_api.ApiEmbedder`
sets it)."""


# --- helpers shared by the backends ---------------------------------------------------------------


def check_items(items: Sequence[Any], modality: str) -> list[Any]:
    """Validate ``items`` for a backend of ``modality`` and return them as a list.

    Text items must be ``str``; image items must be a path (``str``/``os.PathLike``) or a
    ``PIL.Image.Image``.

    Raises:
        DataError: ``items`` is a bare string/bytes, or an item has the wrong type.
    """
    from embedselect.errors import DataError

    if isinstance(items, (str, bytes)):
        raise DataError("items must be a sequence of items, not a single string: wrap it in a list")
    items = list(items)
    if modality == TEXT:
        for i, it in enumerate(items):
            if not isinstance(it, str):
                raise DataError(
                    f"item {i} is {type(it).__name__}, but this embedder takes text: pass a list of str"
                )
    elif modality == IMAGE:
        import os

        for i, it in enumerate(items):
            if not (isinstance(it, (str, os.PathLike)) or _is_pil_image(it)):
                raise DataError(
                    f"item {i} is {type(it).__name__}, but this embedder takes images: pass image file paths"
                )
    return items


def _is_pil_image(obj: Any) -> bool:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - pillow is a dependency
        return False
    return isinstance(obj, Image.Image)


def load_image(item: Any, mode: str = "RGB"):
    """Open one image item (path or PIL image) as a PIL image in ``mode`` (``"RGB"`` or ``"L"``).

    Raises:
        DataFileNotFoundError: the file does not exist.
        DecodeError: the file is not a readable image.
    """
    from PIL import Image, UnidentifiedImageError

    from embedselect.errors import DataFileNotFoundError, DecodeError

    if _is_pil_image(item):
        return as_mode(item, mode)
    try:
        with open_image(item) as im:
            return as_mode(im, mode)
    except FileNotFoundError as exc:
        raise DataFileNotFoundError(f"image file not found: {item}: check the path") from exc
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise DecodeError(f"cannot decode image {item}: {too_large(exc) or exc}; remove or replace the file") from exc


def as_embedding_matrix(x: Any, n: int, *, dtype: str = "float32") -> np.ndarray:
    """``x`` (torch tensor or array) as a C-contiguous float32 numpy array of shape (n, d).

    ``dtype`` is the precision the model computed in (``"float32"``, ``"float16"``, ``"bfloat16"``): it decides what
    the NaN/inf message suggests (a lower precision may overflow; float32 output that is not finite is the model's).

    Raises:
        ModelLoadError: the model returned a different number of rows or non-finite values.
    """
    from embedselect.errors import ModelLoadError

    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    # the non-finite check is below: its message depends on the precision the model ran in
    arr = np.ascontiguousarray(check_embeddings(x, what="the model's output", n=n, min_dims=0, finite=False,
                                                error=ModelLoadError))
    if n and nonfinite_rows(arr):  # in row blocks: no matrix-sized mask (768 MB at 10^6 x 768)
        if dtype != "float32":
            raise ModelLoadError(
                f"the model produced NaN/inf embeddings in {dtype} (often an overflow of the lower precision): "
                "retry with dtype=float32 (the candidate option ?dtype=float32)"
            )
        raise ModelLoadError(
            "the model produced NaN/inf embeddings although it ran in float32, so this is not a precision overflow: "
            "its weights or its handling of these inputs is broken; try another revision or backend of it, or leave "
            "it out"
        )
    return arr
