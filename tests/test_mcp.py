"""`reverie mcp` through the MCP SDK's own stdio client, against a running stack: every tool, and
no memory crossing from one project to another unless it was remembered for every project; and
lines that are no message, each answered with a JSON-RPC error."""

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

from tests.support.mcp import DEEP_CALL, reverie_mcp, text_of, until
from tests.support.mcp import git_project as project
from tests.support.processes import REVERIE, Stack, run_hook, wait_for

pytestmark = pytest.mark.integration

TOOLS = {
    "memory_recall",
    "memory_remember",
    "memory_reflect",
    "memory_timeline",
    "memory_forget",
    "memory_why",
    "memory_stash",
    "memory_curate",
}


def test_every_tool_through_the_sdk_client_and_no_memory_crosses_projects(
    stack: Stack, env: dict[str, str], tmp_path: Path
) -> None:
    app, other = project(tmp_path, "app"), project(tmp_path, "other")

    async def scenario() -> None:
        async with reverie_mcp(env, app) as session:
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            remember = next(t for t in listed.tools if t.name == "memory_remember")
            assert set(remember.input_schema["properties"]) == {
                "text",
                "category",
                "outcome",
                "agent",
                "global",
            }

            failed, said = await text_of(
                session,
                "memory_remember",
                {"text": "The staging cluster is called kestrel", "outcome": "failed"},
            )
            assert not failed and "for this project" in said, said
            failed, said = await text_of(
                session, "memory_remember", {"text": "The deploy bucket is called heron"}
            )
            assert not failed, said
            failed, said = await text_of(
                session, "memory_remember", {"text": "Pin the linters' versions in CI", "global": True}
            )
            assert not failed and "as deployment for every project" in said, said  # told by "CI"

            async def recalled(query: str) -> str | None:
                failed, said = await text_of(session, "memory_recall", {"query": query})
                assert not failed, said
                return said if "kestrel" in said else None

            found = await until(
                lambda: recalled("what is the staging cluster called?"), "the memory recalled"
            )
            [line] = [line for line in found.splitlines() if "kestrel" in line]
            assert (
                line.startswith("[")
                and "Anti-pattern (it failed): The staging cluster is called kestrel" in line
            )
            memory_id = line.rsplit("id: ", 1)[1]

            async def heron_in(session: ClientSession) -> str | None:
                _, said = await text_of(session, "memory_recall", {"query": "what is the deploy bucket?"})
                return next((line for line in said.splitlines() if "heron" in line), None)

            found_heron = await until(lambda: heron_in(session), "the app's other memory recalled")
            heron_id = found_heron.rsplit("id: ", 1)[1]
            failed, said = await text_of(session, "memory_why", {"id": heron_id})
            assert not failed and "heron" in said, said

            failed, said = await text_of(session, "memory_reflect", {"query": "staging cluster"})
            assert not failed and "remembered" in said and "kestrel" in said, said

            failed, said = await text_of(session, "memory_forget", {"id": memory_id, "reason": "renamed"})
            assert not failed and memory_id in said

            async def gone() -> bool:  # the memory itself (the opinion reflect formed may quote it)
                said = await recalled("what is the staging cluster called?")
                return said is None or memory_id not in said

            await until(gone, "the forgotten memory to leave recall")
            failed, said = await text_of(session, "memory_timeline", {"entity": "no-such-entity-anywhere"})
            assert failed and "no entity is called" in said
            failed, said = await text_of(session, "memory_why", {"id": "fact:nothing-has-this-id"})
            assert failed and "nothing-has-this-id" in said
            failed, said = await text_of(
                session, "memory_forget", {"id": "fact:nothing-has-this-id", "reason": "wrong"}
            )
            assert failed and "no memory has the id 'fact:nothing-has-this-id'" in said, said

        async with reverie_mcp(env, other) as session:

            async def linters() -> str | None:
                _, said = await text_of(session, "memory_recall", {"query": "linter versions in CI"})
                return said if "Pin the linters" in said else None

            everywhere = await until(linters, "the global memory in another project")
            assert "kestrel" not in everywhere
            failed, said = await text_of(session, "memory_recall", {"query": "staging cluster kestrel"})
            assert not failed and "kestrel" not in said  # the other project's, never this one's
            failed, said = await text_of(session, "memory_why", {"id": heron_id})
            assert failed and "in this project" in said and "heron" not in said.replace(heron_id, ""), said
            failed, said = await text_of(session, "memory_forget", {"id": heron_id, "reason": "not mine"})
            assert failed and "in this project" in said, said

        async with reverie_mcp(env, app) as session:
            _, said = await text_of(session, "memory_recall", {"query": "what is the deploy bucket?"})
            assert "heron" in said  # the other project's request to forget it changed nothing

    anyio.run(scenario)
    [(source, scope)] = stack.query(
        "select source, scope from remembered r join events e on e.id = r.event_id where text like 'Pin the%'"
    )
    assert (source, scope) == ("mcp", "global")


def test_reflection_reads_a_choice_by_meaning_and_is_given_only_to_whoever_asks(
    stack: Stack, env: dict[str, str], tmp_path: Path
) -> None:
    app = project(tmp_path, "db-app")
    here = {**env, "CLAUDE_PROJECT_DIR": str(app)}
    chose = "We chose PostgreSQL over MySQL because we need JSONB columns"
    done = subprocess.run(
        [*REVERIE, "remember", chose], env=here, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    asked = "should we use MySQL for the new service?"

    def reflected() -> str | None:
        said = subprocess.run(
            [*REVERIE, "reflect", asked], env=here, capture_output=True, text=True, timeout=120
        )
        return said.stdout if "PostgreSQL" in said.stdout else None

    opinion = wait_for(reflected, timeout=90, what="the choice to be recalled")
    assert "argues against" in opinion and "supports it" not in opinion, opinion
    # formed by the running stack: the command loads neither DuckDB, nor the model, nor numpy
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "reverie", "reflect", asked],
        env=here, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    loaded = {line.rpartition("|")[2].strip() for line in traced.stderr.splitlines()}
    assert "argues against" in traced.stdout and "reverie.reflecting" in loaded, traced.stdout
    assert not loaded & {"duckdb", "numpy", "projections.minilm", "workers.dynamics.follow"}

    async def through_mcp() -> None:
        async with reverie_mcp(env, app) as session:
            failed, said = await text_of(session, "memory_reflect", {"query": asked})
            assert not failed and "argues against" in said, said

    anyio.run(through_mcp)
    wait_for(
        lambda: stack.query("SELECT count(*) FROM opinions")[0][0], timeout=60, what="the opinion folded"
    )

    def context(prompt: str) -> str:
        payload = {"hook_event_name": "UserPromptSubmit", "session_id": "later", "prompt": prompt}
        done = run_hook(json.dumps(payload).encode(), here)
        return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]) if done.stdout else ""

    told = wait_for(
        lambda: (c := context("which database do we use?")) and "PostgreSQL" in c and c, timeout=60
    )
    assert "reverie's opinion" not in told  # an answer to whoever asked, not a fact for every prompt
    assert context("explain python decorators") == ""
    asked_again = wait_for(lambda: (c := context(asked)) and "reverie's opinion" in c and c, timeout=60)
    facts, reflection = asked_again.index("## Facts\n- "), asked_again.index("## reverie's own reflection")
    assert facts < reflection  # the evidence first; the opinion after it, labelled as reverie's


def answer_to(server: "subprocess.Popen[bytes]", line: bytes, timeout: float = 60.0) -> dict[str, object]:
    """What `reverie mcp` answers to `line`: the next line it writes, within `timeout` seconds."""
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(line + b"\n")
    server.stdin.flush()
    deadline = time.monotonic() + timeout
    answer = b""
    while not answer.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0 and select.select([server.stdout], [], [], left)[0], f"no answer to {line[:40]!r}"
        chunk = os.read(server.stdout.fileno(), 1 << 16)
        assert chunk, "the server closed its output"
        answer += chunk
    said: dict[str, object] = json.loads(answer)
    return said


def test_lines_that_are_no_message_are_answered_and_the_server_goes_on(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = project(tmp_path, "garbled")
    server = subprocess.Popen(
        [*REVERIE, "mcp"],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = {"name": "test", "version": "1"}
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        started = answer_to(server, json.dumps(initialize).encode())
        assert started["id"] == 1 and "result" in started, started
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')  # type: ignore[union-attr]
        for line, code, id in (
            (b"{not json", -32700, None),
            (bytes(b for b in range(256) if b not in b"\r\n"), -32700, None),  # binary garbage
            (b"[1, 2, 3]", -32600, None),
            (DEEP_CALL, -32600, 41),  # too deep to read, but its id is at the top
            (b"[" * 5000 + b"]" * 5000, -32600, None),
        ):
            answer = answer_to(server, line)
            assert answer["jsonrpc"] == "2.0" and answer["id"] == id, (line[:30], answer)
            assert answer["error"]["code"] == code, (line[:30], answer)  # type: ignore[index]
        listed = answer_to(server, b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        assert listed["id"] == 2 and {t["name"] for t in listed["result"]["tools"]} == TOOLS  # type: ignore[index]
    finally:
        server.kill()
        server.wait(30)
