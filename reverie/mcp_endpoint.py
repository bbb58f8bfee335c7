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

import msgspec

from reverie import loopback
from reverie.loopback import Endpoint, kept, listens
from schemas.settings import Settings

PATH = "/mcp"
LISTEN = "REVERIE_MCP_LISTEN"
TOKEN = "REVERIE_MCP_TOKEN"
URL = "REVERIE_MCP_URL"


def url(endpoint: Endpoint) -> str:
    """The URL a client on this host posts to."""
    return endpoint.origin + PATH


class Registered(msgspec.Struct, frozen=True):
    """What `reverie install` writes into a Claude Code `http` MCP entry."""

    url: str
    token: str


def wanted(settings: Settings, environ: dict[str, str]) -> Endpoint:
    """Where the server should listen and the token it should ask for (loopback.wanted):
    REVERIE_MCP_LISTEN and REVERIE_MCP_TOKEN, else what the data directory keeps, else new."""
    return loopback.wanted(settings.mcp_file, environ, LISTEN, TOKEN)


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

    endpoint = kept(settings.mcp_file)
    if endpoint is None or not endpoint.port or running_pid(settings) is None:
        return None
    return Registered(url(endpoint), endpoint.token) if listens(endpoint, timeout) else None
