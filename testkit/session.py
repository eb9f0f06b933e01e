"""The test session's environment, shared by tests/conftest.py and benchmarks/tests/conftest.py.

:func:`isolate` must run before anything imports huggingface_hub or transformers (they read the environment once,
at import): a temporary ``HF_HOME``, no telemetry, no proxy for loopback, no ``HF_TOKEN``, two OpenMP threads, and
sockets that connect to loopback addresses only (a test that reaches the network fails with
``ConnectionRefusedError``). Calling it again does nothing.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
from typing import Any

_done = False


def _check_address(address: Any) -> None:
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


def isolate() -> None:
    """Set the environment above and guard ``socket.socket.connect`` / ``connect_ex`` (once per process)."""
    global _done
    if _done:
        return
    _done = True
    session_tmp = tempfile.mkdtemp(prefix="embedselect-tests-")
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    os.environ["no_proxy"] = "127.0.0.1,localhost"
    os.environ["HF_HOME"] = os.path.join(session_tmp, "hf-home")
    os.environ.pop("HF_TOKEN", None)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("OMP_NUM_THREADS", "2")

    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: Any) -> None:
        _check_address(address)
        return real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(address)
        return real_connect_ex(self, address)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
