"""Baseline embedders that need no download: TF-IDF + truncated SVD, seeded random projection, and
raw-pixel PCA. They run on CPU with numpy/scikit-learn and are fully determined by their ``seed``.

A ranking that puts a neural embedder below these baselines on the user's data is a useful warning.

Fitting: ``tfidf-svd`` and ``pixel-pca`` learn from data. With ``fit_items`` given at construction
they are fitted once on those items and every :meth:`embed` call transforms with that fit (outputs of
separate calls are comparable). Without it, each :meth:`embed` call fits on the items it is given, so
``embed(items)`` is a pure function of ``items`` and the settings. ``random-projection`` learns nothing.

A fit can be kept without pickle: ``fit_state()`` returns it as plain numpy arrays (numbers and unicode strings,
for :func:`numpy.savez`), and ``fit_state=`` at construction (:func:`make_baseline`) restores it, so that a
search index embeds its queries exactly as its items were embedded, without refitting (:mod:`embedselect.search`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from embedselect.models.backends.base import IMAGE, TEXT, as_embedding_matrix, check_items, load_image
from embedselect._util.progress import progress_enabled
from embedselect.models.backends.device import progress_bar
from embedselect.errors import ConfigError, EmptyDataError, TooFewItemsError
from embedselect._util.kinds import BASELINE_VERSION, FITTED_BASELINES
from embedselect._util.suggest import did_you_mean


_U64 = np.uint64


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser on a uint64 array (wrapping arithmetic): a fast, well-mixed integer hash."""
    with np.errstate(over="ignore"):
        z = x + _U64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
        return z ^ (z >> _U64(31))


def gaussian_projection_rows(columns: np.ndarray, dim: int, seed: int) -> np.ndarray:
    """Rows ``columns`` of a (conceptually infinite) seeded Gaussian matrix, shape (len(columns), dim),
    float32, entries i.i.d. N(0, 1).

    Entry (j, k) depends only on (seed, j, k), so the matrix never has to be materialised: a hashed
    bag of words with 2**20 columns only draws the rows its vocabulary uses.
    """
    cols = np.asarray(columns, dtype=np.uint64).reshape(-1, 1)
    k = np.arange(dim, dtype=np.uint64).reshape(1, -1)
    with np.errstate(over="ignore"):
        key = _splitmix64(np.asarray([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
        base = (cols * _U64(dim) + k) * _U64(2) + key
    u1 = ((_splitmix64(base) >> _U64(11)).astype(np.float64) + 0.5) / float(1 << 53)
    u2 = ((_splitmix64(base + _U64(1)) >> _U64(11)).astype(np.float64) + 0.5) / float(1 << 53)
    return (np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)).astype(np.float32)


def _check_dim(dim: Any, name: str = "dim") -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ConfigError(f"{name} must be a positive integer, got {dim!r}")
    return int(dim)


def _images_to_pixels(items: list, size: int, mode: str, progress: bool, desc: str) -> np.ndarray:
    """Images -> float32 array (n, size*size*channels), values in [0, 1]."""
    from PIL import Image

    ch = 1 if mode == "L" else 3
    out = np.empty((len(items), size * size * ch), dtype=np.float32)
    with progress_bar(len(items), desc=desc, enabled=progress_enabled(progress), unit="img") as bar:
        for i, it in enumerate(items):
            im = load_image(it, mode).resize((size, size), Image.Resampling.BILINEAR)
            out[i] = np.asarray(im, dtype=np.float32).reshape(-1) / 255.0
            bar.update(1)
    return out


def _exact_truncated_svd(x, k: int) -> np.ndarray:
    """Top-``k`` right singular vectors of the sparse (n, V) matrix ``x`` as a dense (V, k) float64 array,
    via the eigendecomposition of the Gram matrix x xᵀ (n×n, float64). Signs are fixed so the largest-|v|
    entry of each vector is positive. Directions with (numerically) zero singular value are zero columns,
    so the output dimension is always ``k``."""
    g = np.asarray((x @ x.T).toarray(), dtype=np.float64)
    w, u = np.linalg.eigh(g)
    order = np.argsort(w)[::-1][:k]
    w, u = np.clip(w[order], 0.0, None), u[:, order]
    s = np.sqrt(w)
    ok = s > max(s[0], 1e-300) * 1e-6 if s.size else s.astype(bool)
    comps = np.zeros((x.shape[1], k), dtype=np.float64)
    if ok.any():
        comps[:, ok] = np.asarray(x.T @ u[:, ok], dtype=np.float64) / s[ok]
    idx = np.argmax(np.abs(comps), axis=0)
    signs = np.sign(comps[idx, np.arange(k)])
    signs[signs == 0] = 1.0
    return comps * signs


class TfidfSvdEmbedder:
    """TF-IDF (sublinear tf, unigrams+bigrams, l2 rows) followed by truncated SVD (LSA).

    Output: float32 (n, d) with d = min(dim, n_fit - 1, vocabulary size - 1) (at least 1), where
    n_fit is the number of items the fit saw.
    """

    backend = "tfidf-svd"
    modality = TEXT
    device = "cpu"
    EXACT_MAX_ITEMS = 3000
    """Up to this many fit items the SVD is exact (eigendecomposition of the n×n Gram matrix, float64);
    above it, scikit-learn's seeded randomized TruncatedSVD."""
    SVD_MAX_ITEMS = 50_000
    """Above this many fit items the randomized SVD learns its components from a seeded sample of this many rows
    of the tf-idf matrix (the vocabulary and idf still come from every item). At n = 10⁵ synthetic sentences the
    SVD was 9.3 s of the 18 s a fit and transform took on 2 cores, and the SVD grows with n. 256 components from a
    50 000-row sample kept a mean canonical correlation of 0.976 with the full fit (docs/backends.md)."""

    def __init__(self, *, dim: int = 256, seed: int = 0, max_features: int = 50_000, ngram_max: int = 2,
                 fit_items: Sequence[str] | None = None, fit_state: Mapping[str, np.ndarray] | None = None) -> None:
        self.dim = _check_dim(dim)
        self.max_features = _check_dim(max_features, "max_features")
        self.ngram_max = _check_dim(ngram_max, "ngram_max")
        self.seed = int(seed)
        self._fitted = None
        if fit_items is not None and fit_state is not None:
            raise ConfigError("give fit_items (fit now) or fit_state (a saved fit), not both")
        if fit_items is not None:
            self._fitted = self._fit(check_items(fit_items, TEXT))
        elif fit_state is not None:
            self._fitted = self._restore(fit_state)

    def fit_state(self) -> dict[str, np.ndarray]:
        """The fit as arrays: ``terms`` (unicode (V,), the vocabulary in column order), ``idf`` (float (V,)),
        ``components`` (float64 (V, d)), ``backend`` and ``settings`` (JSON) as 0-d unicode arrays.

        Raises:
            ConfigError: the embedder was built without ``fit_items`` (it fits per call: nothing to keep).
        """
        if self._fitted is None:
            raise ConfigError("this tfidf-svd embedder fits on each embed() call; build it with fit_items to keep a fit")
        vec, comps = self._fitted
        terms = np.array(sorted(vec.vocabulary_, key=vec.vocabulary_.get), dtype=str)
        return _state(self, terms=terms, idf=np.asarray(vec.idf_), components=comps)

    def _restore(self, state: Mapping[str, np.ndarray]):
        from sklearn.feature_extraction.text import TfidfVectorizer

        _check_state(self, state, ("terms", "idf", "components"))
        terms, idf, comps = np.asarray(state["terms"]), np.asarray(state["idf"]), np.asarray(state["components"])
        if not (terms.ndim == idf.ndim == 1 and comps.ndim == 2 and len(terms) == len(idf) == comps.shape[0]):
            raise ConfigError(f"a tfidf-svd fit_state needs terms (V,), idf (V,) and components (V, d); got shapes "
                              f"{terms.shape}, {idf.shape}, {comps.shape}")
        vec = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, self.ngram_max), dtype=np.float32,
                              vocabulary={str(t): i for i, t in enumerate(terms.tolist())})
        vec.idf_ = idf
        return vec, comps.astype(np.float64, copy=False)

    def settings(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "max_features": self.max_features,
            "ngram_range": [1, self.ngram_max],
            "sublinear_tf": True,
            "seed": self.seed,
            "fit": "fit_items" if self._fitted is not None else "per-call",
            "svd_max_items": self.SVD_MAX_ITEMS,
            "version": BASELINE_VERSION,
        }

    def _fit(self, texts: list[str]):
        vec, comps, _ = self._fit_matrix(texts)
        return vec, comps

    def _fit_matrix(self, texts: list[str]):
        """(vectorizer, components float64 (V, d), the texts' tf-idf matrix (n, V) sparse float32)."""
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        if len(texts) < 2:
            raise TooFewItemsError(
                f"tfidf-svd needs at least 2 texts to fit, got {len(texts)}: pass more items", needed=2, got=len(texts)
            )
        vec = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, self.ngram_max), max_features=self.max_features,
                              dtype=np.float32)
        try:
            x = vec.fit_transform(texts)
        except ValueError as exc:  # empty vocabulary
            raise EmptyDataError(f"tfidf-svd found no words in the texts ({exc}); check the text column") from exc
        k = max(1, min(self.dim, len(texts) - 1, x.shape[1] - 1))
        if x.shape[0] <= self.EXACT_MAX_ITEMS:
            return vec, _exact_truncated_svd(x, k), x
        rows = x
        if x.shape[0] > self.SVD_MAX_ITEMS:
            sample = np.random.default_rng([self.seed, 23]).choice(x.shape[0], self.SVD_MAX_ITEMS, replace=False)
            rows = x[np.sort(sample)]
        svd = TruncatedSVD(n_components=k, algorithm="randomized", n_iter=5, random_state=self.seed)
        svd.fit(rows)
        return vec, svd.components_.T.astype(np.float64), x

    def embed(self, items: Sequence[str], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embed texts; ``batch_size`` is ignored (the work is one sparse matrix product)."""
        texts = check_items(items, TEXT)
        if not texts:
            return np.zeros((0, self._fitted[1].shape[1] if self._fitted else 0), dtype=np.float32)
        if self._fitted is not None:
            vec, comps = self._fitted
            x = vec.transform(texts)
        else:  # fitted on these very texts: their tf-idf matrix is already there (no second tokenisation)
            _, comps, x = self._fit_matrix(texts)
        return as_embedding_matrix(np.asarray(x @ comps), len(texts))


class RandomProjectionEmbedder:
    """A seeded Gaussian random projection, scaled by 1/sqrt(dim).

    Text: hashed bag of words (2**20 buckets, lower-cased, l2-normalised counts) projected to ``dim``.
    Image: RGB pixels resized to ``size``×``size`` (values in [0, 1], centred at 0.5) projected to ``dim``.
    Output: float32 (n, dim). Nothing is fitted; the same item always gets the same vector.
    """

    backend = "random-projection"
    device = "cpu"
    N_HASH_FEATURES = 2**20

    def __init__(self, *, modality: str = TEXT, dim: int = 256, seed: int = 0, size: int = 32) -> None:
        if modality not in (TEXT, IMAGE):
            raise ConfigError(f"random-projection modality must be 'text' or 'image', got {modality!r}")
        self.modality = modality
        self.dim = _check_dim(dim)
        self.size = _check_dim(size, "size")
        self.seed = int(seed)
        self._pixel_matrix: np.ndarray | None = None

    def settings(self) -> dict[str, Any]:
        s: dict[str, Any] = {"dim": self.dim, "seed": self.seed, "version": BASELINE_VERSION}
        if self.modality == TEXT:
            s.update(features="hashed-bow", n_features=self.N_HASH_FEATURES)
        else:
            s.update(features="pixels-rgb", size=self.size)
        return s

    def embed(self, items: Sequence[Any], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embed texts or image paths (per :attr:`modality`); ``batch_size`` is ignored."""
        items = check_items(items, self.modality)
        scale = np.float32(1.0 / np.sqrt(self.dim))
        if self.modality == TEXT:
            from sklearn.feature_extraction.text import HashingVectorizer

            if not items:
                return np.zeros((0, self.dim), dtype=np.float32)
            x = HashingVectorizer(n_features=self.N_HASH_FEATURES, alternate_sign=False, norm="l2",
                                  dtype=np.float32).transform(items).tocsc()
            used = np.flatnonzero(np.diff(x.indptr))
            rows = gaussian_projection_rows(used, self.dim, self.seed)
            return as_embedding_matrix(np.asarray(x[:, used] @ rows.astype(np.float64)) * scale, len(items))
        pixels = _images_to_pixels(items, self.size, "RGB", progress, "random-projection")
        if self._pixel_matrix is None:
            self._pixel_matrix = gaussian_projection_rows(np.arange(pixels.shape[1]), self.dim, self.seed)
        out = (pixels.astype(np.float64) - 0.5) @ self._pixel_matrix.astype(np.float64) * scale
        return as_embedding_matrix(out, len(items))


class PixelPCAEmbedder:
    """Raw pixels (resized to ``size``×``size``, RGB or grayscale, values in [0, 1]) reduced by PCA.

    Output: float32 (n, d) with d = min(dim, n_fit - 1, n_pixels) (at least 1).
    """

    backend = "pixel-pca"
    modality = IMAGE
    device = "cpu"

    def __init__(self, *, dim: int = 128, size: int = 32, grayscale: bool = False, seed: int = 0,
                 fit_items: Sequence[Any] | None = None, fit_state: Mapping[str, np.ndarray] | None = None) -> None:
        self.dim = _check_dim(dim)
        self.size = _check_dim(size, "size")
        self.grayscale = bool(grayscale)
        self.seed = int(seed)
        self._pca: tuple[np.ndarray, np.ndarray] | None = None  # (mean (p,), components (d, p)), float64
        if fit_items is not None and fit_state is not None:
            raise ConfigError("give fit_items (fit now) or fit_state (a saved fit), not both")
        if fit_items is not None:
            self._pca = self._fit(self._pixels(check_items(fit_items, IMAGE), False))
        elif fit_state is not None:
            _check_state(self, fit_state, ("mean", "components"))
            mean, comps = np.asarray(fit_state["mean"], np.float64), np.asarray(fit_state["components"], np.float64)
            if not (mean.ndim == 1 and comps.ndim == 2 and comps.shape[1] == mean.shape[0]):
                raise ConfigError(f"a pixel-pca fit_state needs mean (p,) and components (d, p); got shapes "
                                  f"{mean.shape}, {comps.shape}")
            self._pca = (mean, comps)

    def fit_state(self) -> dict[str, np.ndarray]:
        """The fit as arrays: ``mean`` (float64 (p,), p pixels), ``components`` (float64 (d, p)), ``backend`` and
        ``settings`` (JSON) as 0-d unicode arrays.

        Raises:
            ConfigError: the embedder was built without ``fit_items`` (it fits per call: nothing to keep).
        """
        if self._pca is None:
            raise ConfigError("this pixel-pca embedder fits on each embed() call; build it with fit_items to keep a fit")
        return _state(self, mean=self._pca[0], components=self._pca[1])

    @property
    def _mode(self) -> str:
        return "L" if self.grayscale else "RGB"

    def settings(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "size": self.size,
            "color": "grayscale" if self.grayscale else "rgb",
            "seed": self.seed,
            "fit": "fit_items" if self._pca is not None else "per-call",
            "version": BASELINE_VERSION,
        }

    def _pixels(self, items: list, progress: bool) -> np.ndarray:
        return _images_to_pixels(items, self.size, self._mode, progress, "pixel-pca")

    def _fit(self, pixels: np.ndarray):
        from sklearn.decomposition import PCA

        n = pixels.shape[0]
        if n < 2:
            raise TooFewItemsError(f"pixel-pca needs at least 2 images to fit, got {n}: pass more items",
                                   needed=2, got=n)
        k = max(1, min(self.dim, n - 1, pixels.shape[1]))
        solver = "randomized" if k < min(n, pixels.shape[1]) * 0.8 else "full"
        pca = PCA(n_components=k, svd_solver=solver, random_state=self.seed).fit(pixels.astype(np.float64))
        return np.asarray(pca.mean_, np.float64), np.asarray(pca.components_, np.float64)

    def embed(self, items: Sequence[Path | str], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embed image paths; ``batch_size`` is ignored."""
        items = check_items(items, IMAGE)
        if not items:
            return np.zeros((0, self._pca[1].shape[0] if self._pca is not None else 0), dtype=np.float32)
        pixels = self._pixels(items, progress)
        mean, comps = self._pca if self._pca is not None else self._fit(pixels)
        if pixels.shape[1] != comps.shape[1]:
            raise ConfigError(f"pixel-pca was fitted on {comps.shape[1]} pixel values, these images give "
                              f"{pixels.shape[1]}; use the same size and color settings")
        # PCA.transform (whiten=False) in scikit-learn's order of operations: project, then subtract the
        # projected mean, so that the output is bit-for-bit the library's
        out = pixels.astype(np.float64) @ comps.T
        out -= mean.reshape(1, -1) @ comps.T
        return as_embedding_matrix(out, len(items))


def _state(embedder: Any, **arrays: np.ndarray) -> dict[str, np.ndarray]:
    """A fitted baseline's ``fit_state``: its arrays plus its backend and settings as 0-d unicode arrays."""
    import json

    return {"backend": np.array(embedder.backend), "settings": np.array(json.dumps(embedder.settings())), **arrays}


def _check_state(embedder: Any, state: Mapping[str, np.ndarray], keys: tuple[str, ...]) -> None:
    """Refuse a ``fit_state`` of another baseline, of other settings, or without ``keys``."""
    import json

    backend = str(np.asarray(state.get("backend", "")))
    if backend != embedder.backend:
        raise ConfigError(f"this fit_state belongs to {backend or 'an unknown backend'!r}, not {embedder.backend!r}")
    missing = [k for k in keys if k not in state]
    if missing:
        raise ConfigError(f"the {embedder.backend} fit_state lacks {missing}")
    saved = json.loads(str(np.asarray(state.get("settings", "{}"))))
    mine = {k: v for k, v in embedder.settings().items() if k != "fit"}
    differ = sorted(k for k in mine if k in saved and saved[k] != mine[k])
    if differ:
        raise ConfigError(f"the {embedder.backend} fit_state was fitted with other settings "
                          f"({', '.join(f'{k}={saved[k]!r}, not {mine[k]!r}' for k in differ)})")


BASELINE_OPTIONS: dict[str, dict[str, type]] = {
    "tfidf-svd": {"dim": int, "max_features": int, "ngram_max": int, "seed": int},
    "random-projection": {"dim": int, "size": int, "seed": int},
    "pixel-pca": {"dim": int, "size": int, "grayscale": bool, "seed": int},
}
"""Every option each baseline takes (``?dim=64&seed=7``) -> its type; besides these only ``modality``, which the data
decides. :func:`make_baseline` refuses any other option, and :func:`baseline_key_options` puts each into the cache
key through the embedder's ``settings()``."""

BASELINE_CLASSES = {
    "tfidf-svd": TfidfSvdEmbedder,
    "random-projection": RandomProjectionEmbedder,
    "pixel-pca": PixelPCAEmbedder,
}


def make_baseline(name: str, *, modality: str, options: dict[str, Any], seed: int = 0,
                  fit_items: Sequence[Any] | None = None, fit_state: Mapping[str, np.ndarray] | None = None):
    """Build the baseline embedder ``name`` with backend ``options`` (``dim``, ``size``, ...); a fitted one
    (``tfidf-svd``, ``pixel-pca``) fitted on ``fit_items`` or restored from ``fit_state`` (see the module
    docstring).

    Raises:
        ConfigError: unknown baseline, unknown option, or a modality the baseline cannot embed.
    """
    if name not in BASELINE_CLASSES:
        raise ConfigError(f"unknown baseline {name!r}{did_you_mean(name, BASELINE_CLASSES)}: use one of "
                          f"{', '.join(BASELINE_CLASSES)}")
    if fit_state is not None and name not in FITTED_BASELINES:
        raise ConfigError(f"baseline {name!r} learns nothing: it takes no fit_state")
    opts = dict(options)
    seed = int(opts.pop("seed", seed))
    allowed = set(BASELINE_OPTIONS[name]) - {"seed"}
    opts.pop("modality", None)
    unknown = sorted(set(opts) - allowed)
    if unknown:
        raise ConfigError(f"baseline {name!r} does not take option(s) {unknown}: allowed are {sorted(allowed)}")
    if name == "random-projection":
        return RandomProjectionEmbedder(modality=modality, seed=seed, **opts)
    expected = TEXT if name == "tfidf-svd" else IMAGE
    if modality != expected:
        raise ConfigError(f"baseline {name!r} embeds {expected}s only, not {modality}: use "
                          f"{'pixel-pca' if expected == TEXT else 'tfidf-svd'} or random-projection")
    return BASELINE_CLASSES[name](seed=seed, fit_items=fit_items, fit_state=fit_state, **opts)


def baseline_key_options(name: str, *, modality: str, options: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
    """The settings that decide baseline ``name``'s vectors, for the cache key of its run: the ``settings()`` of the
    embedder these ``options`` build (an option such as ``?seed=7`` overrides the run's ``seed``; defaults are
    filled in, so ``?dim=256`` and no option share a key), without ``fit`` (how the fit is kept, not what it is).

    Raises:
        ConfigError: as :func:`make_baseline` (unknown baseline or option, wrong modality).
    """
    embedder = make_baseline(name, modality=modality, options=dict(options), seed=seed)
    return {k: v for k, v in embedder.settings().items() if k != "fit"}
