"""Model-folder layout rules that candidate resolution, the hub and the backends share, in one low place.

How a JSON file of a model folder or of the Hugging Face cache (``config.json``, ``modules.json``,
``1_Pooling/config.json``) is read: a missing file is ``None``, a damaged one a typed error that names the file;
and which file names make up a tokenizer (:data:`TOKENIZER_FILES`: what the hub fetches for a text model, and how
a local folder is recognised as a text model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from embedselect.errors import ModelFileError

TOKENIZER_FILES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "spiece.model",
        "sentencepiece.bpe.model",
        "tokenizer.model",
        "source.spm",
        "bpe.codes",
    }
)
"""File names (at a model folder's root) of the tokenizers of transformers / sentence-transformers models."""


def read_json(path: str | Path) -> Any:
    """The JSON document in ``path`` (any JSON value: dict, list, str, number, bool or None), or ``None`` when there
    is no such file.

    Raises:
        ModelFileError: the file exists but is not valid UTF-8 JSON, or cannot be read (a folder, no permission);
            the message names the file and what is wrong with it.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{p} is not UTF-8 text ({exc}); the model folder is damaged: download or save it again") from None
    except OSError as exc:
        raise ModelFileError(f"{p} cannot be read ({type(exc).__name__}: {exc.strerror or exc})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ModelFileError(f"{p} is not valid JSON ({exc}); the model folder is damaged: download or save it "
                             "again") from None
