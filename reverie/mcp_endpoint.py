"""Where the stack's MCP server listens over HTTP, and the secret it asks every request for.

`reverie up` runs `reverie mcp --http` (reverie/mcp_http.py): one server, on loopback, for every
project of the data directory. What Claude Code needs to reach it is kept in the data
directory's `mcp.json` (0600, in the 0700 data directory, written whole): the port, chosen by
the system the first time the server starts and kept after, so that what `reverie install`
wrote stays right across restarts; and the token, 32 random bytes made the first time, which a
client sends as `Authorization: Bearer <token>` (Claude Code sends static headers only, so no
handshake as the recall service's over TCP: ingest/handshake.py).

Two variables change that, for a stack in containers (docker-compose.yml): REVERIE_MCP_LISTEN
(host:port) has the server listen there, and REVERIE_MCP_TOKEN gives the token (required when
the host is not loopback). REVERIE_MCP_URL, with REVERIE_MCP_TOKEN, tells `reverie install` to
register a server elsewhere (the containers' MCP server, published on this host's loopback).

Standard library and msgspec only: `reverie install` reads this without the MCP SDK.
"""

import os
import secrets
import socket

import msgspec

from schemas.disk.files import private_directory, write_durably
from schemas.settings import Settings

LOOPBACK = "127.0.0.1"
PATH = "/mcp"
LISTEN = "REVERIE_MCP_LISTEN"
TOKEN = "REVERIE_MCP_TOKEN"
URL = "REVERIE_MCP_URL"
_LIMIT = 1 << 12  # bytes: the file holds a port and a token


class Endpoint(msgspec.Struct, frozen=True):
    """Where the MCP server listens (`host`, `port`) and the token it asks for."""

    port: int
    token: str
    host: str = LOOPBACK

    @property
    def url(self) -> str:
        """The URL a client on this host posts to."""
        host = LOOPBACK if self.host in ("", "0.0.0.0") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}{PATH}"


class Registered(msgspec.Struct, frozen=True):
    """What `reverie install` writes into a Claude Code `http` MCP entry."""

    url: str
    token: str


def kept(settings: Settings) -> Endpoint | None:
    """The endpoint the data directory keeps, if any: None when there is none, or when the file
    is not this user's alone (then nobody may trust its token), or unreadable."""
    try:
        fd = os.open(settings.mcp_file, os.O_RDONLY | os.O_CLOEXEC)
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


def keep(settings: Settings, endpoint: Endpoint) -> None:
    """Write `endpoint` to the data directory (0600, whole or not at all)."""
    folder = private_directory(settings.home, create=True)
    write_durably(folder, os.path.basename(settings.mcp_file), msgspec.json.encode(endpoint))


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def wanted(settings: Settings, environ: dict[str, str]) -> Endpoint:
    """Where the server should listen and the token it should ask for: REVERIE_MCP_LISTEN and
    REVERIE_MCP_TOKEN if set, else what the data directory keeps, else loopback on a port the
    system picks (0) and a new token. SystemExit for a listener off loopback without a token."""
    before = kept(settings)
    token = environ.get(TOKEN) or (before.token if before else new_token())
    listen = environ.get(LISTEN)
    if listen:
        host, _, port = listen.rpartition(":")
        host = host.strip("[]") or LOOPBACK
        if not environ.get(TOKEN) and not is_loopback(host):
            raise SystemExit(f"{LISTEN} off loopback needs {TOKEN}: MCP is not served there without one")
        return Endpoint(int(port), token, host)
    return Endpoint(before.port if before else 0, token)


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback only."""
    return host in ("localhost", "::1") or host.startswith("127.")


def served(settings: Settings, environ: dict[str, str], timeout: float = 0.5) -> Registered | None:
    """The MCP server `reverie install` should register, if one answers: REVERIE_MCP_URL with
    REVERIE_MCP_TOKEN when set; else this data directory's, if its stack runs and something
    listens on the kept port. None otherwise (then install registers the stdio server). Costs a
    loopback connect at most."""
    if environ.get(URL):
        if not environ.get(TOKEN):
            raise ValueError(f"{URL} needs {TOKEN}: the MCP server there refuses requests without it")
        return Registered(environ[URL], environ[TOKEN])
    from workers.supervisor import running_pid

    endpoint = kept(settings)
    if endpoint is None or not endpoint.port or running_pid(settings) is None:
        return None
    return Registered(endpoint.url, endpoint.token) if listens(endpoint, timeout) else None


def listens(endpoint: Endpoint, timeout: float) -> bool:
    """Whether something listens where `endpoint` says, as a client on this host reaches it."""
    try:
        socket.create_connection((LOOPBACK, endpoint.port), timeout=timeout).close()
    except OSError:
        return False
    return True
