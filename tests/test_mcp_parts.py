"""The MCP servers' small parts, alone: the id of a request too deep to parse, what counts as a
loopback Host and Origin, the entry `reverie install` writes for the stack's server, and where
the server keeps its port and token."""

import asyncio
import json
import os
import socket
import stat

import pytest

from reverie.installing.entries import mcp_http_server
from reverie.loopback import Endpoint, bound, from_loopback, keep, kept
from reverie.mcp_endpoint import wanted
from reverie.mcp_stdio import request_id
from schemas.settings import Settings
from tests.support.mcp import DEEP_CALL


@pytest.mark.parametrize(
    ("line", "id"),
    [
        (DEEP_CALL.decode(), 41),
        ('{"id": "a\\"b", "params": {"id": 7}}', 'a"b'),
        ('{"params": {"id": 7}, "method": "id", "id" : -3}', -3),  # the top level's, not a value "id"
        ('{"method": "x\\\\", "id": 5}', 5),  # a string ending in a backslash
        ('{"params": {"id": 7}}', None),
        ('{"id": true}', None),
        ('{"id": [1]}', None),
        ('{"id": 1.5}', None),
        ("[" * 5000, None),
        ('{"id', None),
        ("{not json", None),
    ],
)
def test_the_id_of_a_request_is_found_at_its_top_level_only(line: str, id: object) -> None:
    assert request_id(line) == id


@pytest.mark.parametrize(
    ("hosts", "origins", "allowed"),
    [
        ([b"127.0.0.1:7378"], [], True),
        ([b"localhost:7378"], [b"http://localhost:3000"], True),
        ([b"[::1]:7378"], [b"https://127.0.0.1"], True),
        ([b"localhost"], [], True),
        ([b"evil.example:7378"], [], False),
        ([b"127.0.0.1.evil.example"], [], False),
        ([b"localhost.evil.example:80"], [], False),
        ([b"127.0.0.1:7378"], [b"http://evil.example"], False),
        ([b"127.0.0.1:7378"], [b"http://localhost.evil.example"], False),
        ([b"127.0.0.1:7378"], [b"null"], False),
        ([b"127.0.0.1:7378"], [b"file://"], False),
        ([b"127.0.0.1:7378", b"evil.example"], [], False),  # two Host headers
        ([], [], False),
    ],
)
def test_only_loopback_hosts_and_origins_are_let_in(
    hosts: list[bytes], origins: list[bytes], allowed: bool
) -> None:
    assert from_loopback(hosts, origins) is allowed


def test_the_entry_names_the_root_encoded_so_claude_code_expands_nothing() -> None:
    entry = mcp_http_server("http://127.0.0.1:7378/mcp", "t0ken", "/home/me/${HOME}/a b?#%")
    assert entry == {
        "type": "http",
        "url": "http://127.0.0.1:7378/mcp?root=/home/me/%24%7BHOME%7D/a%20b%3F%23%25",
        "headers": {"Authorization": "Bearer t0ken"},
    }
    assert mcp_http_server("http://127.0.0.1:7378/mcp", "t")["url"] == "http://127.0.0.1:7378/mcp"


def test_the_port_and_token_are_kept_private_and_trusted_only_so(home: str) -> None:
    settings = Settings(home)
    first = wanted(settings, {})
    assert first.port == 0 and len(first.token) >= 40 and kept(settings.mcp_file) is None
    keep(settings.mcp_file, Endpoint(40123, first.token))
    assert stat.S_IMODE(os.stat(settings.mcp_file).st_mode) == 0o600
    again = wanted(settings, {})
    assert (again.port, again.token) == (40123, first.token)  # the same across restarts
    os.chmod(settings.mcp_file, 0o644)
    assert kept(settings.mcp_file) is None  # a token others could read is no secret
    with open(settings.mcp_file, "w") as f:
        json.dump({"port": "x"}, f)
    os.chmod(settings.mcp_file, 0o600)
    assert kept(settings.mcp_file) is None
    listen = {"REVERIE_MCP_LISTEN": "0.0.0.0:7378", "REVERIE_MCP_TOKEN": "given"}
    assert wanted(settings, listen) == Endpoint(7378, "given", "0.0.0.0")
    with pytest.raises(SystemExit, match="REVERIE_MCP_TOKEN"):
        wanted(settings, {"REVERIE_MCP_LISTEN": "0.0.0.0:7378"})
    assert wanted(settings, {"REVERIE_MCP_LISTEN": "127.0.0.1:7379"}).port == 7379


def test_the_server_answers_without_waiting_for_delayed_acks() -> None:
    """The listener the HTTP server serves on hands asyncio connections it sets TCP_NODELAY on:
    without it, on a kept-alive connection each answer's body waited for the client's delayed
    ACK, 40 ms a request (measured: 44 ms a `tools/list`, 0.6 ms with it)."""
    listener, endpoint = bound(Endpoint(0, "t"), movable=True)
    assert endpoint.host == "127.0.0.1" and endpoint.port == listener.getsockname()[1] > 0

    async def accepted_nodelay() -> int:
        found: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Accepted(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                found.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        server = await asyncio.get_running_loop().create_server(Accepted, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
            nodelay = await asyncio.wait_for(found, 30)
            writer.close()
        return nodelay

    assert asyncio.run(accepted_nodelay()) != 0
