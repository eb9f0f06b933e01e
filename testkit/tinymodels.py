"""Tiny models built from scratch (random weights, explicit seed) in the exact on-disk layout the hub uses.

Every builder writes into ``directory`` (created if missing) and returns it as a :class:`~pathlib.Path`.
Nothing is downloaded; each builder runs in well under a second once torch/transformers are imported.

Layouts (as on huggingface.co):

- :func:`make_tiny_sentence_transformer`: ``modules.json``, ``config.json`` (BERT), ``model.safetensors``,
  ``tokenizer.json`` + ``tokenizer_config.json`` + ``vocab.txt`` + ``special_tokens_map.json``,
  ``sentence_bert_config.json``, ``config_sentence_transformers.json``, ``1_Pooling/config.json``.
- :func:`make_tiny_timm`: ``config.json`` (``architecture``, ``num_classes``, ``model_args``,
  ``pretrained_cfg`` with ``input_size``/``mean``/``std``...) + ``model.safetensors``, as written by
  ``timm.models.push_to_hf_hub``.
- :func:`make_tiny_transformers_text` / :func:`make_tiny_transformers_image`: ``config.json`` with
  ``model_type`` + ``model.safetensors`` + tokenizer files / ``preprocessor_config.json``.
- :func:`make_pickle_only_model`: a transformers text model whose weights are only ``pytorch_model.bin``.
- :func:`make_remote_code_model`: a transformers text model whose ``config.json`` has an ``auto_map``
  pointing at a ``modeling_tiny.py`` shipped in the folder (custom code).
"""

from __future__ import annotations

import json
from pathlib import Path

from embedselect._util.compat import ensure_torchvision_importable

# A tiny lower-case WordPiece vocabulary: specials, common English words, single letters and digits, and
# "##" continuation pieces so any lower-case ASCII word tokenizes without [UNK].
_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_WORDS = (
    "the a an and or of to in on at for with from by is are was were be been it this that these those "
    "i you he she we they my your our their cat cats dog dogs car cars bank money river water tree house "
    "city food eat eats ate run runs ran sit sat mat red blue green big small good bad new old day night "
    "man woman child people model models data text image picture photo sun moon sky rain snow hot cold "
    "fast slow happy sad play plays game music book read write computer phone market stock price"
).split()
_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789")
_PUNCT = list(".,!?;:'\"-()/&%$#@+=*")


def tiny_vocab() -> list[str]:
    """The WordPiece vocabulary (list of tokens, index = token id) used by the tiny text models."""
    vocab = list(_SPECIALS) + _PUNCT + _CHARS + ["##" + c for c in _CHARS]
    seen = set(vocab)
    for w in _WORDS:
        if w not in seen:
            vocab.append(w)
            seen.add(w)
    return vocab


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2), encoding="utf-8")


def as_trained(model, seed: int):
    """Give every normalisation layer of ``model`` (a torch module; the layers
    :func:`embedselect.models.backends.weights.norm_layers` finds) a weight of 1 + 0.1·N(0, 1) and a bias of
    0.1·N(0, 1), from a generator seeded with ``seed``, in place; returns ``model``. A tiny model built from its
    config holds its initial norms, which the tool names as an untrained checkpoint in a warning; a trained one holds
    moved norms, as these do."""
    import torch

    from embedselect.models.backends.weights import norm_layers

    gen = torch.Generator().manual_seed(10_000 + seed)
    with torch.no_grad():
        for weight, bias in list(norm_layers(model)):
            weight.copy_(1 + 0.1 * torch.randn(weight.shape, generator=gen))
            if bias is not None:
                bias.copy_(0.1 * torch.randn(bias.shape, generator=gen))
    return model


def _tiny_bert(directory: Path, seed: int, hidden: int = 32, layers: int = 2):
    """Save a random BertModel + BERT tokenizer in ``directory``; returns the model."""
    ensure_torchvision_importable()
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=hidden * 2,
        max_position_embeddings=128,
        type_vocab_size=2,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    model = as_trained(BertModel(config).eval(), seed)
    model.save_pretrained(directory, safe_serialization=True)
    tok = BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True, model_max_length=128)
    tok.save_pretrained(directory)
    if not (directory / "vocab.txt").exists():  # tokenizer may not re-write it; the hub layout has it
        (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    _write_json(
        directory / "special_tokens_map.json",
        {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"},
    )
    return model


def make_tiny_sentence_transformer(directory, seed: int = 0, *, normalize: bool = True, hidden: int = 32,
                                   layers: int = 2, prompts: dict[str, str] | None = None) -> Path:
    """A sentence-transformers model: tiny BERT (``hidden`` 32, ``layers`` 2 by default) + mean Pooling
    (+ Normalize). ``prompts``: the model's own prompts (``{"query": "query: ", "document": "passage: "}``), saved in
    ``config_sentence_transformers.json`` as a hub model saves them.

    Output: ``hidden``-d sentence embeddings (L2-normalised when ``normalize``).
    """
    d = Path(directory)
    _tiny_bert(d, seed, hidden=hidden, layers=layers)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        (d / "2_Normalize").mkdir(exist_ok=True)
    _write_json(d / "modules.json", modules)
    _write_json(d / "sentence_bert_config.json", {"max_seq_length": 64, "do_lower_case": False})
    _write_json(
        d / "config_sentence_transformers.json",
        {"__version__": {"sentence_transformers": "3.0.0", "transformers": "4.40.0", "pytorch": "2.3.0"},
         "prompts": dict(prompts or {}), "default_prompt_name": None, "similarity_fn_name": "cosine"},
    )
    _write_json(
        d / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    )
    return d


def make_constant_sentence_transformer(directory, seed: int = 0) -> Path:
    """A degenerate sentence-transformers model: the tiny BERT of :func:`make_tiny_sentence_transformer` whose last
    LayerNorm has weight 0 and a fixed non-zero bias, so every token, and every sentence, gets the same 32-d
    vector (a broken fine-tune, as the hostile-input pass of issue 14 met it)."""
    import torch
    from safetensors.torch import load_file, save_file

    d = make_tiny_sentence_transformer(directory, seed)
    weights = load_file(d / "model.safetensors")
    last = max(int(k.split(".")[2]) for k in weights if k.startswith("encoder.layer."))
    prefix = f"encoder.layer.{last}.output.LayerNorm."
    weights[prefix + "weight"].zero_()
    weights[prefix + "bias"].copy_(torch.linspace(-1.0, 1.0, weights[prefix + "bias"].shape[0]))
    save_file(weights, d / "model.safetensors", metadata={"format": "pt"})
    return d


def make_tiny_timm(directory, seed: int = 0) -> Path:
    """A timm ViT (``vit_tiny_patch16_224`` shrunk: 32×32 input, patch 8, dim 32, depth 2), saved as the
    hub layout (``config.json`` + ``model.safetensors``) with ``num_classes=10``, mean/std (0.5, 0.5, 0.5)
    and ``crop_pct`` 0.875. Loadable with ``timm.create_model("local-dir:<dir>", pretrained=True)``;
    pooled features (``num_classes=0``) are 32-d.
    """
    ensure_torchvision_importable()
    import timm
    import torch
    from timm.models import save_for_hf

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = timm.create_model(
        "vit_tiny_patch16_224",
        pretrained=False,
        num_classes=10,
        img_size=32,
        patch_size=8,
        embed_dim=32,
        depth=2,
        num_heads=2,
    ).eval()
    as_trained(model, seed)
    save_for_hf(
        model,
        str(d),
        safe_serialization=True,
        model_args={"img_size": 32, "patch_size": 8, "embed_dim": 32, "depth": 2, "num_heads": 2},
        data_config={"input_size": (3, 32, 32), "mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5),
                     "crop_pct": 0.875, "interpolation": "bicubic"},
    )
    return d


def drop_checkpoint_weights(directory, contains: str) -> list[str]:
    """Remove from ``directory``'s ``model.safetensors`` every tensor whose name contains ``contains`` (a checkpoint
    that does not hold all of its config's weights, as one saved for another architecture); returns the names
    removed, sorted."""
    ensure_torchvision_importable()
    from safetensors.torch import load_file, save_file

    path = Path(directory) / "model.safetensors"
    tensors = load_file(str(path))
    gone = sorted(k for k in tensors if contains in k)
    save_file({k: v for k, v in tensors.items() if k not in gone}, str(path), metadata={"format": "pt"})
    return gone


def make_tiny_transformers_text(directory, seed: int = 0) -> Path:
    """A plain transformers ``AutoModel`` text model (tiny BERT, hidden 32) with its tokenizer; no
    sentence-transformers files, so pooling is the embedder's choice. Hidden size 32."""
    d = Path(directory)
    _tiny_bert(d, seed)
    return d


def make_tiny_transformers_image(directory, seed: int = 0) -> Path:
    """A transformers ``ViTModel`` (32×32 input, patch 8, hidden 32, 2 layers) + ``ViTImageProcessor``
    (resize to 32×32, mean/std 0.5). Hidden size 32."""
    ensure_torchvision_importable()
    import torch
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    config = ViTConfig(
        image_size=32,
        patch_size=8,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    torch.manual_seed(seed)
    model = as_trained(ViTModel(config).eval(), seed)
    model.save_pretrained(d, safe_serialization=True)
    proc = ViTImageProcessor(
        do_resize=True, size={"height": 32, "width": 32}, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5]
    )
    proc.save_pretrained(d)
    return d


def make_pickle_only_model(directory, seed: int = 0) -> Path:
    """A transformers text model (tiny BERT) whose weights are only a pickle ``pytorch_model.bin``."""
    import torch

    d = Path(directory)
    model = _tiny_bert(d, seed)
    for f in d.glob("*.safetensors"):
        f.unlink()
    torch.save(model.state_dict(), d / "pytorch_model.bin")
    return d


_REMOTE_CODE = '''"""Custom model code shipped in the repo (what trust_remote_code would run)."""
from transformers import BertConfig, BertModel


class TinyRemoteConfig(BertConfig):
    model_type = "tiny-remote"


class TinyRemoteModel(BertModel):
    config_class = TinyRemoteConfig
'''


def make_remote_code_model(directory, seed: int = 0) -> Path:
    """A transformers text model whose ``config.json`` maps ``AutoConfig``/``AutoModel`` to classes in a
    ``modeling_tiny.py`` inside the folder (``auto_map``), i.e. it needs ``trust_remote_code=True``.
    Weights are safetensors; the custom classes are plain BERT subclasses, so the model works once allowed."""
    d = Path(directory)
    _tiny_bert(d, seed)
    (d / "modeling_tiny.py").write_text(_REMOTE_CODE, encoding="utf-8")
    cfg_path = d / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["model_type"] = "tiny-remote"
    cfg["architectures"] = ["TinyRemoteModel"]
    cfg["auto_map"] = {"AutoConfig": "modeling_tiny.TinyRemoteConfig", "AutoModel": "modeling_tiny.TinyRemoteModel"}
    _write_json(cfg_path, cfg)
    return d


def make_tiny_images(directory, n: int = 6, *, size: int = 40, seed: int = 0) -> list[Path]:
    """``n`` random RGB PNG images of ``size``×``size`` pixels (varying colour blocks), sorted paths."""
    import numpy as np
    from PIL import Image

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        arr = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
        arr[: size // 2, : size // 2] = rng.integers(0, 256, size=3, dtype=np.uint8)  # a solid block
        p = d / f"img_{i:03d}.png"
        Image.fromarray(arr).save(p)
        paths.append(p)
    return paths


def make_dark_light_photos(folder, seed: int = 0) -> Path:
    """60 small (12×12) noisy RGB PNGs in two subfolders, ``dark/`` and ``light/`` (odd and even i), named
    ``img00.png``…``img59.png`` whatever the seed (as two cameras name theirs): an image folder with two labels by
    folder. Returns ``folder``."""
    import numpy as np
    from PIL import Image

    folder = Path(folder)
    rng = np.random.default_rng(seed)
    for i in range(60):
        sub = folder / ("dark" if i % 2 else "light")
        sub.mkdir(parents=True, exist_ok=True)
        base = 40 if i % 2 else 200
        Image.fromarray((base + rng.integers(-30, 30, size=(12, 12, 3))).clip(0, 255).astype(np.uint8)).save(
            sub / f"img{i:02d}.png")
    return folder


def latent_views(n: int, dims, seed: int, *, noise_step: float = 0.2) -> dict:
    """Synthetic candidates for the sufficiency benchmarks and GPU tests: candidate k is ``tanh`` of a random linear
    map of one shared 32-d Gaussian latent plus Gaussian noise of std 0.1 + ``noise_step``·k, so later candidates
    are noisier views. Returns {"c<k>_<d>": float32 (n, d)}, numpy generator ``seed``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 32))
    out = {}
    for k, d in enumerate(dims):
        a = rng.standard_normal((32, d)) / np.sqrt(32)
        out[f"c{k}_{d}"] = (np.tanh(z @ a) + (0.1 + noise_step * k) * rng.standard_normal((n, d))).astype(np.float32)
    return out


def make_tiny_clip(directory, seed: int = 0) -> Path:
    """A transformers ``CLIPModel`` (dual encoder: text + vision towers, projection 16) with a
    ``CLIPImageProcessor`` (32×32). No tokenizer files: it is used as an image embedder
    (``pooling="projection"`` = ``get_image_features``). Hidden size 32, projection 16."""
    ensure_torchvision_importable()
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    config = CLIPConfig(
        text_config={"vocab_size": 99, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "max_position_embeddings": 32},
        vision_config={"image_size": 32, "patch_size": 8, "hidden_size": 32, "intermediate_size": 64,
                       "num_hidden_layers": 2, "num_attention_heads": 2},
        projection_dim=16,
    )
    torch.manual_seed(seed)
    as_trained(CLIPModel(config).eval(), seed).save_pretrained(d, safe_serialization=True)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(d)
    return d


def make_tiny_router(directory, seed: int = 0, *, below: str = "") -> Path:
    """A sentence-transformers Router model as ``SentenceTransformer.save`` writes one (``modules.json``: a
    ``Router`` at the root + ``1_Normalize``; ``router_config.json`` at the root naming its routes' module folders
    ``query_0_Transformer/``, ``query_1_Pooling/``, ``document_0_Transformer/``, ``document_1_Pooling/``): the tiny
    model of :func:`make_tiny_sentence_transformer` on both routes, the document route's BERT built with ``seed + 1``
    so the two routes differ. Default route ``document``; 32-d, L2-normalised. ``below``: the Router is saved in that
    folder instead (``0_Router``, ``mods/0_Router``), which ``modules.json`` names as its path, its routes' folders
    then one level deeper (``0_Router/query_0_Transformer/``)."""
    import shutil
    import tempfile

    ensure_torchvision_importable()
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Router

    with tempfile.TemporaryDirectory() as tmp:
        query = SentenceTransformer(str(make_tiny_sentence_transformer(Path(tmp) / "q", seed)), device="cpu")
        document = SentenceTransformer(str(make_tiny_sentence_transformer(Path(tmp) / "d", seed + 1)), device="cpu")
        router = Router.for_query_document([query[0], query[1]], [document[0], document[1]])
        d = Path(directory)
        if d.exists():
            shutil.rmtree(d)
        SentenceTransformer(modules=[router, query[2]], device="cpu").save(str(d))
    (d / "README.md").unlink(missing_ok=True)  # a generated card naming library versions: not part of the model
    if below:
        at = d / below
        at.mkdir(parents=True)
        for p in sorted(d.iterdir()):
            if p.name not in ("modules.json", "config_sentence_transformers.json", "1_Normalize", below.split("/")[0]):
                shutil.move(str(p), at / p.name)
        modules = json.loads((d / "modules.json").read_text())
        modules[0]["path"] = below
        _write_json(d / "modules.json", modules)
    return d
