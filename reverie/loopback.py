"""Servers of the stack on this machine's loopback: where one listens, the secret it asks for,
who may ask, and how many may wait. The MCP server (reverie/mcp_http.py) and the dashboard
(reverie/dashboard/) each keep theirs in a file of the data directory.

Loopback is named exactly (`is_loopback`): `localhost` (any case, no trailing dot), an IPv4
address of 127.0.0.0/8 in dotted decimal, `::1`, or the IPv4-mapped form of one of those
(`::ffff:127.0.0.1`). No other spelling is: not `127.1`, `0x7f.0.0.1`, `2130706433`, `0177.0.0.1`,
`127.evil.example`, `localhost.evil`, `localhost.` or `::1%lo`, whatever a resolver would make
of them.

Both servers bound what a client that never finishes a request may hold (`serve_on`): a
request must arrive whole, its line, headers and body, within REQUEST_WITHIN_S of its
connection opening or of the answer before it, else the connection is closed; and at most
MAX_CONNECTIONS are open at once: one more closes the connection that has waited longest for
a request, or, when every one is busy with a request (a long stream of the MCP server's), is
answered 503 and closed itself. A request once whole is never cut, however long its answer.

A kept endpoint lives in a file that is this user's alone (0600, in the 0700 data directory,
written whole): a token in a file others can read is no secret, so such a file is not read.

Standard library and msgspec only: `reverie install` and `reverie status` read these without
the web stack (`serve` imports uvicorn when it runs).
"""

import ipaddress
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import msgspec

from schemas.disk.files import private_directory, write_durably

if TYPE_CHECKING:
    import asyncio

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
# A client on this machine sends a request within milliseconds; 10 s leaves room for one stalled
# on a busy 2-core machine, and frees within 10 s what one that says nothing holds.
REQUEST_WITHIN_S = 10.0
# Each Claude Code session holds a few connections to the MCP server (a stream, a pool of
# posts), a browser six to the dashboard: 256 leaves room for dozens of sessions, and costs
# at most about 11 MB (some 43 KB a connection) and 256 file descriptors.
MAX_CONNECTIONS = 256

LOOPBACK = "127.0.0.1"
_LOOPBACK_V6 = ipaddress.IPv6Address("::1")
# what a connection past MAX_CONNECTIONS is told, when every one open is busy with a request
_BUSY = b"every connection is busy: try again soon\n"
_FULL = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\n"
_FULL += b"Content-Length: %d\r\n\r\n%s" % (len(_BUSY), _BUSY)
_LIMIT = 1 << 12  # bytes: the file holds a port and a token
_MAX_PORT = 65535


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
    """Whether `host` (a name or an address, IPv6 without brackets) names this machine's
    loopback and nothing else, spelled exactly (the module's docstring)."""
    if host.isascii() and host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_loopback
    if address.scope_id is not None:  # ::1%eth0: an interface's, as a resolver reads it
        return False
    mapped = address.ipv4_mapped
    return address == _LOOPBACK_V6 or (mapped is not None and mapped.is_loopback)


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
    to end, connections bounded as the module's docstring says."""
    import uvicorn

    config = uvicorn.Config(
        app,
        http=_bounded_http(),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=_GRACE_S,
    )
    uvicorn.Server(config).run(sockets=[listener])


def _bounded_http() -> "type[asyncio.Protocol]":
    """uvicorn's HTTP/1.1 protocol (h11), bounded: uvicorn itself closes a connection idle
    after an answer (timeout_keep_alive), but never one that has not finished its first
    request, nor one whose next request stalls once begun; and it counts connections only to
    answer requests 503 (limit_concurrency), keeping every connection that sends none."""
    import itertools

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    turns = itertools.count()

    class Bounded(H11Protocol):
        waiting_since = 0  # the turn it began to wait in, for the request it has not received whole
        deadline: "asyncio.TimerHandle | None" = None

        def connection_made(self, transport: "asyncio.Transport") -> None:  # type: ignore[override]
            self.transport = transport  # connection_lost closes it, even when refused here
            if len(self.connections) >= MAX_CONNECTIONS and not self._made_room():
                transport.write(_FULL)
                transport.close()
                return
            super().connection_made(transport)
            self._follow_request()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow_request()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow_request()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_deadline()
            super().connection_lost(exc)

        def _follow_request(self) -> None:
            """Start the deadline when a request is awaited (none under way, or one begun),
            end it once the request is whole."""
            if self.transport.is_closing():
                return
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                if self.deadline is None:
                    self.waiting_since = next(turns)
                    self.deadline = self.loop.call_later(REQUEST_WITHIN_S, self._too_slow)
            else:
                self._stop_deadline()

        def _too_slow(self) -> None:
            self.deadline = None
            self.transport.close()

        def _stop_deadline(self) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None

        def _made_room(self) -> bool:
            """Whether there is room for one more connection, once the one that has waited
            longest for a request is closed, if there is one waiting."""
            live = [c for c in self.connections if not c.transport.is_closing()]
            if len(live) < MAX_CONNECTIONS:
                return True
            waiting = [c for c in live if isinstance(c, Bounded) and c.conn.their_state is h11.IDLE]
            if not waiting:
                return False
            min(waiting, key=lambda c: c.waiting_since).transport.close()
            return True

    return Bounded


def from_loopback(hosts: list[bytes], origins: list[bytes]) -> bool:
    """Whether a request's Host (exactly one) and Origin headers (at most one) name loopback,
    each well formed: a web page that rebinds a name of its own to 127.0.0.1 sends that name
    as its Host."""
    if len(hosts) != 1 or len(origins) > 1:
        return False
    host = _named_host(hosts[0].decode("latin-1").strip())
    if host is None or not is_loopback(host):
        return False
    if not origins:
        return True
    scheme, sep, authority = origins[0].decode("latin-1").strip().partition("://")
    if not sep or scheme not in ("http", "https"):
        return False
    origin = _named_host(authority)
    return origin is not None and is_loopback(origin)


def _named_host(authority: str) -> str | None:
    """The host an authority (`host[:port]`, an IPv6 address in brackets) names, IPv6 without
    its brackets; None when its port is empty, not a number or past 65535, or an IPv6 address
    is out of brackets. What else it holds (a user, a path) stays in the host, which then
    names no loopback."""
    if authority.startswith("["):
        host, sep, rest = authority[1:].partition("]")
        if not sep or ":" not in host:
            return None
    else:
        host, sep, port = authority.partition(":")
        rest = sep + port
    if rest and not (rest.startswith(":") and _is_port(rest[1:])):
        return None
    return host


def _is_port(text: str) -> bool:
    return 0 < len(text) <= 5 and text.isascii() and text.isdigit() and int(text) <= _MAX_PORT
