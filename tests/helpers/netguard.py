"""Block and record every network attempt, to prove that offline code stays offline.

Used by the `socket_guard` fixture and, in a fresh subprocess, by the import-hygiene test
(an import can only be observed once per interpreter). Unix sockets are allowed: they
cannot leave the machine.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any


class NetworkBlocked(OSError):
    """Raised instead of connecting or resolving a name."""


def install_socket_guard(patch: Callable[[Any, str, Any], None] = setattr) -> list[str]:
    """Patch connect/DNS to raise `NetworkBlocked`; returns the list attempts are logged in.

    `patch` is `setattr` for a whole process, or `monkeypatch.setattr` to undo it afterwards.
    """
    attempts: list[str] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded(real: Callable) -> Callable:
        def connect(self: socket.socket, address: Any) -> Any:
            if self.family == getattr(socket, "AF_UNIX", None):
                return real(self, address)
            attempts.append(f"connect {address!r}")
            raise NetworkBlocked(f"socket_guard: connect to {address!r} blocked")
        return connect

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(f"getaddrinfo {host!r}")
        raise NetworkBlocked(f"socket_guard: name lookup of {host!r} blocked")

    def by_name(name: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(f"gethostbyname {name!r}")
        raise NetworkBlocked(f"socket_guard: name lookup of {name!r} blocked")

    patch(socket.socket, "connect", guarded(real_connect))
    patch(socket.socket, "connect_ex", guarded(real_connect_ex))
    patch(socket, "getaddrinfo", resolve)
    patch(socket, "gethostbyname", by_name)
    return attempts
