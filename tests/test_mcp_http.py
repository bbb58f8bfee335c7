"""The stack's MCP server over Streamable HTTP (`reverie mcp --http`, run by `reverie up`), through
the MCP SDK's own client: each call answers for the project its client names (the root in its
URL, or the folder it shares as its root), on the protocol Claude Code speaks and the one before;
what it refuses (no token, another token, a Host or Origin that is not loopback); malformed
requests answered with JSON-RPC errors; and `reverie install` registering it."""

import http.client
import json
import os
import socket
import stat
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import pytest

from reverie.loopback import Endpoint, kept
from reverie.mcp_endpoint import Registered
from schemas.settings import Settings
from tests.support.mcp import DEEP_CALL, git_project, reverie_http, text_of, until
from tests.support.processes import REVERIE, Stack, wait_for

pytestmark = pytest.mark.integration


def registered(stack: Stack) -> Registered:
    found = stack.mcp()
    assert found is not None, "the stack's MCP server does not listen"
    return found


def warm(stack: Stack) -> None:
    """Wait for the recall service the server asks (it never loads the model itself)."""
    recall = stack.settings.recall_socket_path
    wait_for(lambda: os.path.exists(recall), timeout=120, what="the recall service")


def test_each_call_answers_for_the_project_its_client_names(stack: Stack, tmp_path: Path) -> None:
    app, other = git_project(tmp_path, "app"), git_project(tmp_path, "other")
    mcp = registered(stack)
    warm(stack)
    assert urlsplit(mcp.url).hostname == "127.0.0.1"

    async def scenario() -> None:
        async with reverie_http(mcp.url, mcp.token, folder=app) as client:  # as Claude Code: its roots
            taught = {"text": "The staging cluster is called kestrel", "outcome": "failed"}
            failed, said = await text_of(client, "memory_remember", taught)
            assert not failed and "for this project" in said, said

            async def kestrel() -> str | None:
                failed, said = await text_of(client, "memory_recall", {"query": "the staging cluster?"})
                assert not failed, said
                return next((line for line in said.splitlines() if "kestrel" in line), None)

            line = await until(kestrel, "the memory recalled over HTTP")
            memory_id = line.rsplit("id: ", 1)[1]
            failed, said = await text_of(client, "memory_why", {"id": memory_id})
            assert not failed and "kestrel" in said, said
            unknown = {"id": "fact:nobody-knows-it", "reason": "wrong"}
            failed, said = await text_of(client, "memory_forget", unknown)
            assert failed and "no memory has the id 'fact:nobody-knows-it'" in said, said

        # the root in the URL, as `reverie install --scope local` writes it: no roots asked
        scoped = f"{mcp.url}?root={quote(str(other), safe='/')}"
        async with reverie_http(scoped, mcp.token) as client:
            failed, said = await text_of(client, "memory_recall", {"query": "staging cluster kestrel"})
            assert not failed and "kestrel" not in said, said  # the other project's, never this one's
            failed, said = await text_of(client, "memory_forget", {"id": memory_id, "reason": "not mine"})
            assert failed and "in this project" in said, said

        async with reverie_http(mcp.url, mcp.token) as client:  # names no project at all
            failed, said = await text_of(client, "memory_recall", {"query": "staging cluster"})
            assert failed and "which project?" in said and "kestrel" not in said, said

        # the protocol before 2026-07-28: a session, the roots asked in the middle of the call
        async with reverie_http(mcp.url, mcp.token, folder=app, mode="legacy") as client:
            failed, said = await text_of(client, "memory_recall", {"query": "what is the staging cluster?"})
            assert not failed and memory_id in said, said  # the other project's forget changed nothing

    anyio.run(scenario)


def post(
    mcp: Registered, body: bytes, headers: dict[str, str | None] | None = None
) -> tuple[int, dict[str, str], Any]:
    """POST `body` to the server as a client would (the token, a JSON body; `headers` changes
    them, None leaves one out): the status, the headers and the JSON it answered (an SSE
    answer's data)."""
    where = urlsplit(mcp.url)
    sent: dict[str, str | None] = {
        "Authorization": f"Bearer {mcp.token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **(headers or {}),
    }
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=60)
    try:
        connection.putrequest("POST", where.path, skip_host="Host" in sent)
        for name, value in sent.items():
            if value is not None:
                connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        data = response.read().decode()
        answered = {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()
    if answered.get("content-type", "").startswith("text/event-stream"):
        data = next(line[5:] for line in data.splitlines() if line.startswith("data:") and line[5:].strip())
    return response.status, answered, json.loads(data) if data.strip() else None


MODERN: dict[str, str | None] = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
DISCOVER = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
).encode()


def served_by(answer: Any) -> str:
    """The server's name in a `server/discover` answer."""
    return str(answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"])


def test_only_a_client_on_this_machine_holding_the_token_is_answered(stack: Stack) -> None:
    mcp = registered(stack)
    status, _, answer = post(mcp, DISCOVER, MODERN)
    assert status == 200 and answer["id"] == 7 and served_by(answer) == "reverie", answer
    port = urlsplit(mcp.url).port
    for token in (None, "", f"Bearer {mcp.token}x", mcp.token, f"Basic {mcp.token}"):
        status, answered, answer = post(mcp, DISCOVER, {**MODERN, "Authorization": token})
        assert status == 401 and answered["www-authenticate"].startswith("Bearer"), (token, status)
        assert answer["error"]["code"] and answer["id"] is None and "result" not in answer
    for name, value in (
        ("Host", f"evil.example:{port}"),  # a name a web page rebound to 127.0.0.1
        ("Host", f"127.0.0.1.evil.example:{port}"),
        ("Origin", "http://evil.example"),
        ("Origin", "null"),
    ):
        status, _, answer = post(mcp, DISCOVER, {**MODERN, name: value})
        assert status == 403 and "error" in answer and "result" not in answer, (value, status, answer)
    status, _, answer = post(
        mcp, DISCOVER, {**MODERN, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}
    )
    assert status == 200 and served_by(answer) == "reverie"
    assert stat.S_IMODE(os.stat(stack.settings.mcp_file).st_mode) == 0o600  # the token's file


def test_malformed_requests_get_json_rpc_errors_and_the_server_goes_on(stack: Stack) -> None:
    mcp = registered(stack)
    for headers in (MODERN, {}):  # the protocol Claude Code speaks, and the one before
        for body in (b"{not json", bytes(range(256)), DEEP_CALL, b"[" * 5000 + b"]" * 5000):
            status, _, answer = post(mcp, body, headers)
            assert 400 <= status < 500 and answer["jsonrpc"] == "2.0", (headers, body[:20], status)
            assert answer["error"]["code"] == -32700 and answer["id"] is None, answer  # a parse error
    status, _, answer = post(mcp, DISCOVER, MODERN)
    assert status == 200 and served_by(answer) == "reverie"


def test_install_registers_the_running_stacks_server_and_its_token_stays_private(
    stack: Stack, env: dict[str, str], tmp_path: Path
) -> None:
    mcp = registered(stack)
    home, project = tmp_path / "home", git_project(tmp_path, "orders")
    home.mkdir()
    claude_json = home / ".claude.json"
    claude_json.write_text('{"numStartups": 3}\n')
    os.chmod(claude_json, 0o644)

    def install(*args: str) -> str:
        done = subprocess.run(
            [*REVERIE, *args], env={**env, "HOME": str(home)}, cwd=project, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    shown = install("install", "claude-code", "--dry-run")
    assert '"type": "http"' in shown and mcp.token not in shown and "Bearer <hidden>" in shown
    assert "over HTTP" in install("install", "claude-code")
    config = json.loads(claude_json.read_text())
    assert config["numStartups"] == 3
    assert config["mcpServers"]["reverie"] == {
        "type": "http",
        "url": mcp.url,  # no project: each call asks Claude Code for its folder
        "headers": {"Authorization": f"Bearer {mcp.token}"},
    }
    assert stat.S_IMODE(claude_json.stat().st_mode) == 0o600

    install("install", "claude-code", "--scope", "local")
    local = json.loads(claude_json.read_text())["projects"][str(project)]["mcpServers"]["reverie"]
    assert local["url"] == f"{mcp.url}?root={quote(str(project), safe='/')}"

    install("install", "claude-code", "--scope", "project")  # shared through git: no token there
    shared = json.loads((project / ".mcp.json").read_text())["mcpServers"]["reverie"]
    assert shared["type"] == "stdio" and [shared["command"], *shared["args"]] == ["reverie", "mcp"]  # on PATH
    assert mcp.token not in (project / ".mcp.json").read_text()

    for scope in ("project", "local", "user"):
        install("uninstall", "claude-code", "--scope", scope)
    assert json.loads(claude_json.read_text()) == {"numStartups": 3}


def test_the_port_is_kept_across_restarts_and_a_taken_one_given_up(env: dict[str, str], home: str) -> None:
    settings = Settings(home)

    def serving(moved_from: int | None = None) -> tuple["subprocess.Popen[bytes]", Endpoint]:
        """`reverie mcp --http` started, once the data directory says where it listens (a port
        other than `moved_from`, if given) and something listens there."""
        server = subprocess.Popen([*REVERIE, "mcp", "--http"], env=env, stderr=subprocess.DEVNULL)

        def listening() -> Endpoint | None:
            endpoint = kept(settings.mcp_file)
            if endpoint is None or endpoint.port == moved_from:
                return None
            try:
                socket.create_connection((endpoint.host, endpoint.port), timeout=5).close()
            except OSError:
                return None
            return endpoint

        return server, wait_for(listening, timeout=60, what="the server to listen")

    def stop(server: "subprocess.Popen[bytes]") -> None:
        server.terminate()
        assert server.wait(30) in (0, -15)

    server, first = serving()
    stop(server)
    server, again = serving()  # the one before stopped: whoever listens now is this one
    stop(server)
    assert (again.port, again.token) == (first.port, first.token)  # what install wrote stays right
    with socket.create_server((first.host, first.port)):  # another program took the port
        server, moved = serving(moved_from=first.port)
        stop(server)
    assert moved.token == first.token
