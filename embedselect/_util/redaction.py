"""Secrets never leave the process: one place that scrubs hub tokens and API keys from text bound for logs, errors
or the store.

A low module (stdlib only), so the store, the hub client, the API backend and the orchestration all use the same
rule.
"""

from __future__ import annotations

import os
import re

_TOKEN_RE = re.compile(r"\bhf_[A-Za-z0-9]{6,}\b")
_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]+@")
"""A URL's userinfo (``https://user:secret@host``): the credentials an ``HF_ENDPOINT`` or a next link may carry."""
_SECRET_ENVS: set[str] = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}
"""Environment variables whose values are secrets: the hub's token variables and each API candidate's ``key_env``."""
_SECRET_TEXTS: set[str] = set()
"""Texts that are secrets themselves: an API candidate's ``?key_env=`` value that names no variable of the
environment (perhaps the key itself, given where its variable's name belongs)."""


def protect_env(name: str) -> None:
    """Treat the value of the environment variable ``name`` as a secret from now on in this process: every
    :func:`redact` replaces it (an API candidate registers its ``?key_env=`` before it reads the key)."""
    _SECRET_ENVS.add(str(name))


def protect_text(text: str) -> None:
    """Treat ``text`` itself as a secret from now on in this process: every :func:`redact` replaces it."""
    _SECRET_TEXTS.add(str(text))


def redact(text: str, token: str | None = None) -> str:
    """``text`` with any secret replaced by ``***``: a Hugging Face token (``hf_...``, the given ``token``,
    ``$HF_TOKEN``), the value of every variable :func:`protect_env` named, every text :func:`protect_text` named,
    and a URL's userinfo
    (``https://user:secret@host`` reads ``https://***@host``). Every message that may reach a log or the store goes
    through this, and every endpoint the tool prints or stores."""
    out = str(text)
    secrets = [token] + [os.environ.get(name) for name in sorted(_SECRET_ENVS)] + sorted(_SECRET_TEXTS)
    for secret in sorted((s.strip() for s in secrets if s and len(s.strip()) >= 4), key=len, reverse=True):
        out = out.replace(secret, "***")
    return _USERINFO_RE.sub(r"\1***@", _TOKEN_RE.sub("***", out))
