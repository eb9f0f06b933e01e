"""Secrets never leave the process: one place that scrubs hub tokens from text bound for logs, errors or the store.

A low module (stdlib only), so the store, the hub client and the orchestration all use the same rule.
"""

from __future__ import annotations

import os
import re

_TOKEN_RE = re.compile(r"\bhf_[A-Za-z0-9]{6,}\b")


def redact(text: str, token: str | None = None) -> str:
    """``text`` with any Hugging Face token (``hf_...``, the given ``token`` and ``$HF_TOKEN``) replaced by
    ``***``. Every message that may reach a log or the store goes through this."""
    out = str(text)
    for secret in (token, os.environ.get("HF_TOKEN"), os.environ.get("HUGGING_FACE_HUB_TOKEN")):
        if secret and len(secret) >= 4:
            out = out.replace(secret, "***")
    return _TOKEN_RE.sub("***", out)
