"""The benchmark harness's tests: the same session environment as tests/ (testkit.session: temporary HF_HOME,
loopback-only sockets), set before anything imports huggingface_hub, and the shared fixtures."""

from __future__ import annotations

from testkit import session

session.isolate()

from embedselect._util.compat import ensure_torchvision_importable  # noqa: E402
from testkit.fixtures import cache_dir, one_thread  # noqa: E402,F401

ensure_torchvision_importable()
