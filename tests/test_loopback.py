"""The stack's servers on loopback (reverie/loopback.py): what names loopback, spelled exactly,
in a listener's address, a Host and an Origin; and, through the real MCP server and the real
dashboard, each its own process, what clients that never finish a request may hold: each is
closed, their number stays bounded, and a client that asks properly is answered meanwhile."""

import asyncio
import json
import os
import select
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from reverie.dashboard.guard import cookie_name, cookie_value
from reverie.loopback import (
    LOOPBACK,
    MAX_CONNECTIONS,
    Endpoint,
    _bounded_http,
    from_loopback,
    is_loopback,
    kept,
    wanted,
)
from schemas.settings import Settings
from tests.support.processes import REVERIE, wait_for

LISTEN, TOKEN = "REVERIE_TEST_LISTEN", "REVERIE_TEST_TOKEN"


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.0.0.2",
        "127.255.255.254",
        "localhost",
        "LOCALHOST",
        "LocalHost",
        "::1",
        "0:0:0:0:0:0:0:1",
        "0000:0000:0000:0000:0000:0000:0000:0001",
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:7f00:1",
        "::FFFF:127.9.9.9",
    ],
)
def test_loopback_spelled_exactly_is_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host",
    [
        "127.evil.example",  # a name, however it begins
        "127.0.0.1.nip.io",
        "127.0.0.1.evil.example",
        "localhost.evil",
        "localhost.evil.example",
        "evil.localhost",
        "localhost.",  # the trailing dot: another spelling, which no client sends
        "127.0.0.1.",
        "127.1",  # what inet_aton reads as 127.0.0.1
        "127.0.1",
        "0x7f.1",
        "0x7f000001",
        "2130706433",
        "017700000001",
        "0177.0.0.1",
        "127.0.0.01",
        "127.000.000.001",
        "127.0.0.256",
        "\u0661\u0662\u0667.0.0.1",  # Arabic-Indic digits
        "\uff11\uff12\uff17.0.0.1",  # fullwidth digits
        "localho\u017ft",  # a long s, which case folding makes an s
        "l\u043ecalhost",  # a Cyrillic o
        " 127.0.0.1",
        "127.0.0.1 ",
        "127.0.0.1\n",
        "127.0.0.1/8",
        "[::1]",  # brackets belong to an authority, not to the address
        "::1%lo",  # scoped to an interface
        "::1%1",
        "::ffff:10.0.0.1",
        "::127.0.0.1",  # IPv4-compatible, not mapped: another address
        "::",
        "0.0.0.0",
        "128.0.0.1",
        "126.255.255.255",
        "10.0.0.1",
        "fe80::1",
        "",
    ],
)
def test_no_other_spelling_is_loopback(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        (b"127.0.0.1:7378", True),
        (b"127.0.0.1", True),
        (b"127.3.2.1:80", True),
        (b"localhost:7378", True),
        (b"LOCALHOST", True),
        (b"[::1]:7378", True),
        (b"[::1]", True),
        (b"[::ffff:127.0.0.1]:7378", True),
        (b" 127.0.0.1:7378 ", True),  # whitespace around a header's value is no part of it
        (b"::1", False),  # an IPv6 address out of brackets
        (b"::1:7378", False),
        (b"[127.0.0.1]:7378", False),
        (b"[::1", False),
        (b"[::1]7378", False),
        (b"127.0.0.1:", False),
        (b"127.0.0.1:0x1cd2", False),
        (b"127.0.0.1:99999", False),
        (b"127.0.0.1:123456", False),
        (b"127.0.0.1:-1", False),
        (b"127.0.0.1:7378:7378", False),
        (b"127.0.0.1:\xd9\xa1", False),  # a non-ASCII digit
        (b"user@127.0.0.1", False),
        (b"127.0.0.1@evil.example", False),
        (b"127.0.0.1/evil", False),
        (b"127.1:7378", False),
        (b"127.evil.example:7378", False),
        (b"localhost.:7378", False),
        (b"localhost.evil:7378", False),
        (b"", False),
    ],
)
def test_a_host_header_is_loopback_only_when_it_is_a_well_formed_loopback_authority(
    host: bytes, allowed: bool
) -> None:
    assert from_loopback([host], []) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (b"http://127.0.0.1:3000", True),
        (b"https://localhost", True),
        (b"http://[::1]:8080", True),
        (b"http://127.0.0.1:3000/", False),  # an Origin has no path
        (b"http://127.0.0.1/x", False),
        (b"http://evil@127.0.0.1", False),
        (b"http://127.0.0.1@evil.example", False),
        (b"http://127.0.0.1.nip.io", False),
        (b"http://127.evil.example", False),
        (b"http://localhost.evil", False),
        (b"http://0x7f.1", False),
        (b"http://127.1", False),
        (b"ws://127.0.0.1", False),
        (b"file://127.0.0.1", False),
        (b"HTTP://127.0.0.1", False),  # browsers send the scheme in lower case
        (b"127.0.0.1", False),
        (b"null", False),
        (b"", False),
    ],
)
def test_an_origin_is_loopback_only_when_it_is_a_loopback_origin_exactly(
    origin: bytes, allowed: bool
) -> None:
    assert from_loopback([b"127.0.0.1:7378"], [origin]) is allowed


@pytest.mark.parametrize("where", ["127.evil.example:7378", "127.1:7378", "localhost.:7378", "0.0.0.0:7378"])
def test_a_listener_off_loopback_needs_a_token(tmp_path: Path, where: str) -> None:
    with pytest.raises(SystemExit, match=TOKEN):
        wanted(os.path.join(tmp_path, "x.json"), {LISTEN: where}, LISTEN, TOKEN)
    given = wanted(os.path.join(tmp_path, "x.json"), {LISTEN: where, TOKEN: "given"}, LISTEN, TOKEN)
    assert (given.port, given.token) == (7378, "given")


@pytest.mark.parametrize(("where", "host"), [("127.0.0.2:7378", "127.0.0.2"), ("[::1]:7378", "::1"),
                                             ("localhost:7378", "localhost")])  # fmt: skip
def test_a_listener_on_loopback_makes_its_own_token(tmp_path: Path, where: str, host: str) -> None:
    endpoint = wanted(os.path.join(tmp_path, "x.json"), {LISTEN: where}, LISTEN, TOKEN)
    assert endpoint.host == host and endpoint.port == 7378 and len(endpoint.token) >= 40


class Pipe(asyncio.Transport):
    """A connection's end as the server holds it, no client at the other: what it is sent."""

    def __init__(self, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self.protocol, self.sent, self.closed = protocol, b"", False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sent += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_past_the_limit_the_longest_waiting_goes_and_when_none_waits_the_newcomer_is_told() -> None:
    asyncio.run(past_the_limit())


async def past_the_limit() -> None:
    import uvicorn
    from uvicorn.server import ServerState

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()  # a body, which never comes

    config = uvicorn.Config(app, http=_bounded_http(), lifespan="off")
    config.load()
    state = ServerState()
    head = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n"

    def connect() -> Pipe:
        protocol = config.http_protocol_class(config=config, server_state=state, app_state={})  # type: ignore[call-arg]
        pipe = Pipe(protocol)
        protocol.connection_made(pipe)
        return pipe

    oldest, older = connect(), connect()  # waiting for a request
    busy = [connect() for _ in range(MAX_CONNECTIONS - 2)]
    for pipe in busy:
        pipe.protocol.data_received(head)  # a request under way: its body
    newcomer = connect()
    await asyncio.sleep(0)
    assert oldest.closed and oldest.sent == b""
    assert not older.closed and not newcomer.closed and not any(p.closed for p in busy)
    assert len(state.connections) == MAX_CONNECTIONS
    for pipe in (older, newcomer):
        pipe.protocol.data_received(head)
    refused = connect()  # every one is busy: none is closed for it
    await asyncio.sleep(0)
    assert refused.closed and refused.sent.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert not any(p.closed for p in [older, newcomer, *busy])
    for pipe in [older, newcomer, *busy]:
        pipe.close()
    await asyncio.gather(*state.tasks)
    assert not state.connections


# How a connection fails to finish its request: it says nothing; it stops in the middle of a
# header; it sends its request a byte at a time, on and on (a slowloris); it sends a whole head
# the server takes (credentials included) and a body that never comes whole.
SAYS_NOTHING, STOPS_MID_HEADER, TRICKLES, STOPS_MID_BODY = range(4)
PAST_LIMIT = 16  # connections past MAX_CONNECTIONS
BURST = 128  # then all at once


class Held:
    """A connection that never finishes its request."""

    def __init__(self, port: int, way: int, body_head: bytes) -> None:
        self.way = way
        self.conn = socket.create_connection((LOOPBACK, port), timeout=30)
        if way == STOPS_MID_HEADER:
            self.conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: te")
        elif way == STOPS_MID_BODY:
            self.conn.sendall(body_head + b"{")
        self.conn.setblocking(False)
        self.closed = False

    def ended(self) -> bool:
        """Whether the server closed it (what it answered first read and dropped); a trickling
        one sends one byte more each time it is asked, as long as it is open."""
        if self.closed:
            return True
        try:
            while self.conn.recv(1 << 16):
                pass
            self.closed = True
        except BlockingIOError:
            if self.way == TRICKLES:
                self._trickle()
        except OSError:  # reset
            self.closed = True
        if self.closed:
            self.conn.close()
        return self.closed

    def _trickle(self) -> None:
        try:
            self.conn.send(b"X")
        except BlockingIOError:
            pass
        except OSError:
            self.closed = True

    def close(self) -> None:
        self.conn.close()


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def hold_and_ask(port: int, pid: int, body_head: bytes, ask: "Ask") -> None:
    """Hold connections to the server `pid` serves on `port` that never finish a request (each
    way of Held), more than it keeps open, and check: its file descriptors never count more than
    MAX_CONNECTIONS of them; it answers `ask` meanwhile; then it closes every one, and its
    descriptors come back to what they were."""
    assert ask() == 200
    before = descriptors(pid)  # the answer's connection closed: it read the server's close
    held: list[Held] = []
    most = 0
    # one at a time, each taken (held, or made room for) before the next: the descriptors read
    # between two are what the server holds, with no burst on its way in
    for i in range(MAX_CONNECTIONS + PAST_LIMIT):
        held.append(Held(port, i % 4 if i < MAX_CONNECTIONS else SAYS_NOTHING, body_head))
        wait_for(partial(taken, held, pid, before), what="the server to take a connection", every=0.001)
        most = max(most, descriptors(pid) - before)
    assert most <= MAX_CONNECTIONS + 2, f"{most} connections held at once"
    try:
        assert ask() == 200  # answered while they are held
        held += [Held(port, i % 4, body_head) for i in range(BURST)]
        wait_for(
            lambda: ended(held) == len(held),
            timeout=90,
            what="the server to close every connection that never finished a request",
            every=0.2,
        )
        wait_for(lambda: descriptors(pid) <= before, what="the server's descriptors as they were")
        assert ask() == 200
    finally:
        for h in held:
            h.close()


def ended(held: list[Held]) -> int:
    return sum(h.ended() for h in held)


def taken(held: list[Held], pid: int, before: int) -> bool:
    """Whether the server `pid` has taken every connection of `held`: it holds each, or
    closed it."""
    return descriptors(pid) - before + ended(held) >= len(held)


class Ask:
    """One request a client entitled to an answer sends, its connection closed by the server
    once answered: its status."""

    def __init__(self, port: int, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> None:
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(body)}")
        self.port, self.request = port, "\r\n".join(lines).encode() + b"\r\n\r\n" + body

    def __call__(self) -> int:
        with socket.create_connection((LOOPBACK, self.port), timeout=60) as conn:
            conn.sendall(self.request)
            answer = b""
            while chunk := conn.recv(1 << 16):
                answer += chunk
        return int(answer.split(b" ", 2)[1])


@contextmanager
def process(command: list[str], env: dict[str, str], stdout: int) -> Iterator["subprocess.Popen[bytes]"]:
    """`reverie COMMAND` as its own process, stopped after."""
    server = subprocess.Popen([*REVERIE, *command], env=env, stdout=stdout, stderr=subprocess.DEVNULL)
    try:
        yield server
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()


def first_line(server: "subprocess.Popen[bytes]", timeout: float = 60) -> str:
    assert server.stdout is not None
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    assert ready, f"nothing printed within {timeout} s"
    return server.stdout.readline().decode()


DISCOVER = (
    b'{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{'
    b'"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},'
    b'"io.modelcontextprotocol/clientCapabilities":{}}}}'
)


@contextmanager
def mcp_server(env: dict[str, str], home: str) -> Iterator[tuple["subprocess.Popen[bytes]", Endpoint]]:
    """`reverie mcp --http` as its own process, once it answers: it, and where it listens."""
    with process(["mcp", "--http"], env, subprocess.DEVNULL) as server:
        endpoint = wait_for(lambda: kept(Settings(home).mcp_file), timeout=60, what="the MCP server's port")
        yield server, endpoint


@pytest.mark.integration
def test_the_mcp_server_closes_requests_never_finished_and_answers_meanwhile(
    env: dict[str, str], home: str
) -> None:
    with mcp_server(env, home) as (server, endpoint):
        port = endpoint.port
        auth = {"Authorization": f"Bearer {endpoint.token}", "Content-Type": "application/json"}
        modern = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
        ask = Ask(port, "POST", "/mcp", {**auth, **modern, "Mcp-Method": "server/discover"}, DISCOVER)
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {auth['Authorization']}\r\n"
        head += "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        head += "Content-Length: 4000\r\n\r\n"
        wait_for(lambda: _answers(ask), timeout=60, what="the MCP server to answer")
        hold_and_ask(port, server.pid, head.encode(), ask)


@pytest.mark.integration
def test_the_dashboard_closes_requests_never_finished_and_answers_meanwhile(env: dict[str, str]) -> None:
    with process(["dashboard", "--serve", "--port", "0"], env, subprocess.PIPE) as server:
        address = urlsplit(first_line(server).removeprefix("dashboard:").strip())
        assert address.port is not None
        token = parse_qs(address.query)["token"][0]
        cookie = f"{cookie_name(address.port)}={cookie_value(token)}"
        ask = Ask(address.port, "GET", "/api/activity", {"Cookie": cookie})
        wait_for(lambda: _answers(ask), timeout=60, what="the dashboard to answer")
        head = f"POST /memories/forget HTTP/1.1\r\nHost: 127.0.0.1:{address.port}\r\nCookie: {cookie}\r\n"
        head += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 4000\r\n\r\n"
        hold_and_ask(address.port, server.pid, head.encode(), ask)


def _answers(ask: Ask) -> bool:
    try:
        return ask() == 200
    except OSError:
        return False


LEGACY = "2025-06-18"  # the protocol before 2026-07-28: a session, and a stream it may hold open


def sent(
    port: int, token: str, method: str, body: bytes, headers: dict[str, str]
) -> tuple[socket.socket, bytes]:
    """A request to the MCP server, as a client on the protocol before sends it: its connection,
    and the head of the answer (status line and headers)."""
    lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {token}",
             "Accept: application/json, text/event-stream", "Content-Type: application/json",
             f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]  # fmt: skip
    conn = socket.create_connection((LOOPBACK, port), timeout=60)
    conn.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(1 << 16)
        assert chunk, head
        head += chunk
    return conn, head.partition(b"\r\n\r\n")[0]


@pytest.mark.integration
def test_an_mcp_stream_outlives_the_time_a_request_has_to_arrive(env: dict[str, str], home: str) -> None:
    with mcp_server(env, home) as (_, endpoint):
        port, token = endpoint.port, endpoint.token
        initialize = {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        answered = wait_for(lambda: _initialized(port, token, body.encode()), timeout=60, what="a session")
        session = {"Mcp-Session-Id": answered, "MCP-Protocol-Version": LEGACY}
        done = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        sent(port, token, "POST", done, session)[0].close()
        stream, head = sent(port, token, "GET", b"", session)  # the server's stream to the client
        assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head, head
        silent = Held(port, SAYS_NOTHING, b"")  # opened after the stream's request was whole
        wait_for(silent.ended, timeout=60, what="the server to close a connection that says nothing")
        stream.setblocking(False)
        try:  # all it sent, if anything: no end
            while stream.recv(1 << 16):
                pass
            raise AssertionError("the server closed the stream")
        except BlockingIOError:
            pass
        listed = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
        conn, head = sent(port, token, "POST", listed, session)
        conn.close()
        assert head.startswith(b"HTTP/1.1 200"), head
        stream.close()


def _initialized(port: int, token: str, body: bytes) -> str | None:
    """The session id the server answers an initialize with, None while it does not answer."""
    try:
        conn, head = sent(port, token, "POST", body, {})
    except OSError:
        return None
    conn.close()
    found = [
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"mcp-session-id:")
    ]
    return found[0].decode() if found else None
