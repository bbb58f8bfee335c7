"""`reverie mcp --http`: the stack's MCP server, one process for every Claude Code session.

A session reaches it over Streamable HTTP (Claude Code's `"type": "http"` servers) instead of
starting `reverie mcp` and waiting for the MCP SDK to import: the cold start is paid once, by
`reverie up`. It serves the tools of reverie/mcp_server.py, each call answering for the project
its request names (`asked`: `?root=FOLDER` in the URL, else the client's roots), and loads no
model: recall asks the warm recall service, and says so when that does not answer.

Who may ask, checked before the SDK reads a byte of the body:
- the Host header must name loopback (127.0.0.1, localhost, [::1]), and an Origin header, if
  any, too: a web page that rebinds a name of its own to 127.0.0.1 is refused (403);
- the request must carry `Authorization: Bearer <token>`, compared in constant time: without
  it, or with another, 401.
Both answers are JSON-RPC errors. Where it listens and the token: reverie/mcp_endpoint.py.

Its resident memory is the SDK's, uvicorn's and, once a tool has run, DuckDB's.
"""

import hmac
import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import msgspec
import structlog

from reverie.mcp_endpoint import LISTEN, LOOPBACK, PATH, Endpoint, is_loopback, keep, kept, wanted
from schemas.settings import Settings

log = structlog.get_logger("reverie.mcp")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_MAX_SESSIONS = 1000  # sessions of clients on the older, stateful protocol, kept in memory
_GRACE_S = 2  # seconds open streams have to end once the stack stops


def serve() -> int:
    """`reverie mcp --http`: listen (mcp_endpoint.wanted), record where, serve until SIGTERM."""
    import uvicorn

    settings = Settings.from_env()
    environ = dict(os.environ)
    listener, endpoint = bound(wanted(settings, environ), movable=not environ.get(LISTEN))
    if kept(settings) != endpoint:
        try:
            keep(settings, endpoint)
        except OSError as e:  # a full disk, say: serve all the same; install finds it once written
            log.warning("mcp.not_kept", error=str(e))
    log.info("mcp.serving", url=endpoint.url)
    config = uvicorn.Config(
        guarded(_app(settings), endpoint.token),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=_GRACE_S,
    )
    uvicorn.Server(config).run(sockets=[listener])
    return 0


def bound(endpoint: Endpoint, movable: bool) -> tuple[socket.socket, Endpoint]:
    """A socket bound and listening where `endpoint` says, and the endpoint with the port it
    got. If that port is taken and `movable` (a kept one, not one the settings name), a new one
    (logged: installed entries point at the old one until `reverie install` runs again); else
    OSError."""
    try:
        listener = _listening(endpoint.host, endpoint.port)
    except OSError:
        if endpoint.port == 0 or not movable:
            raise
        log.warning("mcp.port_taken", port=endpoint.port, fix="reverie install claude-code")
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


def _app(settings: Settings) -> App:
    """The SDK's Streamable HTTP app for the tools, at PATH, each call's project asked."""
    from reverie.mcp_server import asked, build

    server = build(settings, asked(), warm_only=True)
    app: App = server.streamable_http_app(
        streamable_http_path=PATH, host=LOOPBACK, max_sessions=_MAX_SESSIONS
    )
    return app


def guarded(app: App, token: str) -> App:
    """`app` behind the checks of the module's docstring: loopback Host and Origin, then the token."""
    expected = f"Bearer {token}".encode()

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers: dict[bytes, list[bytes]] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.lower(), []).append(value)
        if not from_loopback(headers.get(b"host", []), headers.get(b"origin", [])):
            await refuse(send, 403, "only clients on this machine may ask (Host and Origin must be loopback)")
        elif not _holds(headers.get(b"authorization", []), expected):
            await refuse(send, 401, "no valid token: reverie install claude-code registers it")
        else:
            await app(scope, receive, send)

    return guard


def from_loopback(hosts: list[bytes], origins: list[bytes]) -> bool:
    """Whether a request's Host (exactly one) and Origin headers (at most one) name loopback."""
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


def _holds(presented: list[bytes], expected: bytes) -> bool:
    """Whether the one Authorization header presented is `expected`, compared in constant time."""
    return len(presented) == 1 and hmac.compare_digest(presented[0].strip(), expected)


async def refuse(send: Send, status: int, why: str) -> None:
    """Answer with HTTP `status` and a JSON-RPC error saying `why`."""
    body = msgspec.json.encode({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": why}})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="reverie"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
