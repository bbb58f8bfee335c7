"""`reverie mcp --http`: the stack's MCP server, one process for every Claude Code session.

A session reaches it over Streamable HTTP (Claude Code's `"type": "http"` servers) instead of
starting `reverie mcp` and waiting for the MCP SDK to import: the cold start is paid once, by
`reverie up`. It serves the tools of reverie/mcp_server.py, each call answering for the project
its request names (`asked`: `?root=FOLDER` in the URL, else the client's roots), and loads no
model: recall asks the warm recall service, and says so when that does not answer.

Who may ask, checked before the SDK reads a byte of the body:
- the Host header must name loopback (localhost, 127.0.0.0/8, [::1], spelled exactly:
  reverie/loopback.py), and an Origin header, if any, too: a web page that rebinds a name of its
  own to 127.0.0.1 is refused (403);
- the request must carry `Authorization: Bearer <token>`, compared in constant time: without
  it, or with another, 401.
Both answers are JSON-RPC errors. Where it listens and the token: reverie/mcp_endpoint.py. How
long a request may take to arrive, and how many connections may be open: reverie/loopback.py.

Its resident memory is the SDK's, uvicorn's and, once a tool has run, DuckDB's.
"""

import hmac
import os

import msgspec
import structlog

from reverie.loopback import (
    LOOPBACK,
    App,
    Headers,
    Scope,
    Send,
    bound,
    from_loopback,
    http_only,
    keep,
    kept,
    serve_on,
)
from reverie.mcp_endpoint import LISTEN, PATH, url, wanted
from schemas.settings import Settings

log = structlog.get_logger("reverie.mcp")

_MAX_SESSIONS = 1000  # sessions of clients on the older, stateful protocol, kept in memory


def serve() -> int:
    """`reverie mcp --http`: listen (mcp_endpoint.wanted), record where, serve until SIGTERM."""
    settings = Settings.from_env()
    environ = dict(os.environ)
    asked = wanted(settings, environ)
    listener, endpoint = bound(asked, movable=not environ.get(LISTEN))
    if asked.port and endpoint.port != asked.port:
        log.warning("mcp.port_taken", port=asked.port, fix="reverie install claude-code")
    if kept(settings.mcp_file) != endpoint:
        try:
            keep(settings.mcp_file, endpoint)
        except OSError as e:  # a full disk, say: serve all the same; install finds it once written
            log.warning("mcp.not_kept", error=str(e))
    log.info("mcp.serving", url=url(endpoint))
    serve_on(listener, guarded(_app(settings), endpoint.token))
    return 0


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

    async def check(scope: Scope, headers: Headers, send: Send) -> bool:
        if not from_loopback(headers.get(b"host", []), headers.get(b"origin", [])):
            await refuse(send, 403, "only clients on this machine may ask (Host and Origin must be loopback)")
        elif not _holds(headers.get(b"authorization", []), expected):
            await refuse(send, 401, "no valid token: reverie install claude-code registers it")
        else:
            return True
        return False

    return http_only(app, check)


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
