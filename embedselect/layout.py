"""Model-folder layout rules that candidate resolution, the hub and the backends share, in one low place.

Today: how a JSON file of a model folder or of the Hugging Face cache (``config.json``, ``modules.json``,
``1_Pooling/config.json``) is read: a missing file is ``None``, a damaged one a typed error that names the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from embedselect.errors import ModelFileError


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
