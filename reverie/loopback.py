"""Servers of the stack on this machine's loopback: where one listens, the secret it asks for,
and who may ask. The MCP server (reverie/mcp_http.py) and the dashboard (reverie/dashboard/)
each keep theirs in a file of the data directory.

A kept endpoint lives in a file that is this user's alone (0600, in the 0700 data directory,
written whole): a token in a file others can read is no secret, so such a file is not read.

Standard library and msgspec only: `reverie install` and `reverie status` read these without
the web stack (`serve` imports uvicorn when it runs).
"""

import os
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import msgspec

from schemas.disk.files import private_directory, write_durably

# ASGI, as the servers' guards see it
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = dict[bytes, list[bytes]]  # by lowercased name, each value the request gave
# whether a request may reach the app; one it may not, it answers itself
Check = Callable[[Scope, Headers, Send], Awaitable[bool]]

_GRACE_S = 2  # seconds open requests have to end once a server stops

LOOPBACK = "127.0.0.1"
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_LIMIT = 1 << 12  # bytes: the file holds a port and a token


class Endpoint(msgspec.Struct, frozen=True):
    """Where a server listens (`host`, `port`) and the token it asks for."""

    port: int
    token: str
    host: str = LOOPBACK

    @property
    def origin(self) -> str:
        """Scheme, host and port, as a client on this host reaches it: `http://127.0.0.1:8080`."""
        host = LOOPBACK if self.host in ("", "0.0.0.0") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"


def wanted(path: str, environ: dict[str, str], listen: str, token: str, port: int | None = None) -> Endpoint:
    """Where a server should listen and the token it should ask for: the variables named
    `listen` (host:port) and `token` if set, else loopback on `port`, else what the file `path`
    keeps, else a port the system picks (0) and a new token. SystemExit for a listener off
    loopback without a token."""
    before = kept(path)
    secret = environ.get(token) or (before.token if before else new_token())
    where = environ.get(listen)
    if where:
        host, _, at = where.rpartition(":")
        host = host.strip("[]") or LOOPBACK
        if not environ.get(token) and not is_loopback(host):
            raise SystemExit(f"{listen} off loopback needs {token}: nothing is served there without one")
        return Endpoint(int(at), secret, host)
    return Endpoint(port if port is not None else (before.port if before else 0), secret)


def kept(path: str) -> Endpoint | None:
    """The endpoint the file `path` keeps, if any: None when there is none, or when the file is
    not this user's alone (then nobody may trust its token), or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if found.st_uid != os.getuid() or found.st_mode & 0o077:
            return None
        data = os.read(fd, _LIMIT)
    finally:
        os.close(fd)
    try:
        return msgspec.json.decode(data, type=Endpoint)
    except msgspec.DecodeError:
        return None


def keep(path: str, endpoint: Endpoint) -> None:
    """Write `endpoint` to `path`, a file of the data directory (0600, whole or not at all)."""
    folder = private_directory(os.path.dirname(path), create=True)
    write_durably(folder, os.path.basename(path), msgspec.json.encode(endpoint))


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback only."""
    return host in ("localhost", "::1") or host.startswith("127.")


def listens(endpoint: Endpoint, timeout: float) -> bool:
    """Whether something listens where `endpoint` says, as a client on this host reaches it."""
    try:
        socket.create_connection((LOOPBACK, endpoint.port), timeout=timeout).close()
    except OSError:
        return False
    return True


def bound(endpoint: Endpoint, movable: bool) -> tuple[socket.socket, Endpoint]:
    """A socket bound and listening where `endpoint` says, and the endpoint with the port it
    got. If that port is taken and `movable` (a kept one, not one the user named), a new one;
    else OSError."""
    try:
        listener = _listening(endpoint.host, endpoint.port)
    except OSError:
        if endpoint.port == 0 or not movable:
            raise
        listener = _listening(endpoint.host, 0)
    return listener, msgspec.structs.replace(endpoint, port=listener.getsockname()[1])


def _listening(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio sets TCP_NODELAY only on sockets that say so, and
    # without it each answer's body waits for the client's delayed ACK (40 ms on Linux)
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener


def http_only(app: App, check: Check) -> App:
    """`app` for the HTTP requests `check` lets through; lifespan events pass, a websocket is
    closed."""

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers: Headers = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.lower(), []).append(value)
        if await check(scope, headers, send):
            await app(scope, receive, send)

    return guard


def serve_on(listener: socket.socket, app: App) -> None:
    """Serve `app` on `listener` until SIGINT or SIGTERM (uvicorn), open requests given _GRACE_S
    to end."""
    import uvicorn

    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=_GRACE_S
    )
    uvicorn.Server(config).run(sockets=[listener])


def from_loopback(hosts: list[bytes], origins: list[bytes]) -> bool:
    """Whether a request's Host (exactly one) and Origin headers (at most one) name loopback:
    a web page that rebinds a name of its own to 127.0.0.1 sends that name as its Host."""
    if len(hosts) != 1 or len(origins) > 1:
        return False
    host = hosts[0].decode("latin-1").strip()
    name = (
        host[: host.index("]") + 1]
        if host.startswith("[") and "]" in host
        else host.rpartition(":")[0] or host
    )
    if name not in _LOOPBACK_NAMES:
        return False
    if not origins:
        return True
    origin = urlsplit(origins[0].decode("latin-1").strip())
    return origin.scheme in ("http", "https") and is_loopback(origin.hostname or "")
