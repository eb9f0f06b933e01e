"""Starts the session's fake hub (testkit/hubserver.py) and points HF_ENDPOINT at it.

Imported by tests/conftest.py after the HF environment is set and before anything imports huggingface_hub,
because huggingface_hub reads HF_ENDPOINT once, at import time.
"""

from __future__ import annotations

import os
import sys

from testkit.hubserver import FakeHub

if "huggingface_hub" in sys.modules:  # pragma: no cover - a guard against import-order mistakes
    raise RuntimeError("tests/_hubsetup.py must run before huggingface_hub is imported (it reads HF_ENDPOINT once)")

HUB = FakeHub().start()
os.environ["HF_ENDPOINT"] = HUB.url
