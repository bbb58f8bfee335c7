"""reverie's own unix sockets (the embedded server's, the recall service's): where they live, and
who may be on the other end.

A socket lives in a directory no other user can write: the data directory when the path fits
in sun_path, else `reverie` in $XDG_RUNTIME_DIR, else `reverie-<uid>` in the temp folder,
made 0700 (see `Settings`). So no other user can bind the path first. A server makes its
directory private before it binds (`schemas.disk.files.private_directory`); a client refuses a
directory another user could write, and a peer of another uid (SO_PEERCRED, on Linux), before
it sends a byte (`connect`). Standard library only: the hook connects through here, so it uses
`_socket`, the C module under `socket`, whose import builds no enums (3 ms less per hook).
"""

import _socket
import os

from schemas.disk.files import private_directory


class UnsafeSocket(OSError):
    """A socket another user could have bound, or that another user's process serves."""


def check_peer(sock: _socket.socket, path: str) -> None:
    """Raise UnsafeSocket unless the process at the other end of `sock` (connected to `path`) runs
    as this user (Linux tells; other systems rely on the socket's private directory alone)."""
    if not hasattr(_socket, "SO_PEERCRED"):
        return
    import struct

    ucred = struct.Struct("3i")  # pid, uid, gid
    _, uid, _ = ucred.unpack(sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, ucred.size))
    if uid != os.getuid():
        raise UnsafeSocket(f"{path} is served by uid {uid}, not by this user: nothing was sent")


def connect(path: str, timeout: float) -> _socket.socket:
    """A stream connected to our socket at `path`, its directory and its peer checked first."""
    private_directory(os.path.dirname(path))
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        check_peer(sock, path)
    except BaseException:
        sock.close()
        raise
    return sock
