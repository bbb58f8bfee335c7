"""reverie's MCP server as a client meets it: through the MCP SDK's own clients, on stdio (`reverie
mcp` started in a folder, as Claude Code starts it) or over Streamable HTTP (the stack's, with
its token, and the folder the client shares as its root, as Claude Code shares it)."""

import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client import Client, ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import ErrorData, ListRootsResult, Root

# a call whose argument is nested 5,000 deep: more than any parser here reads, its id at the top
DEEP_CALL = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":'
DEEP_CALL += b'{"name":"memory_recall","arguments":{"query":' + b"[" * 5000 + b"]" * 5000 + b"}}}"


@asynccontextmanager
async def reverie_mcp(env: dict[str, str], project: Path) -> AsyncIterator[ClientSession]:
    """A session with `reverie mcp` started in `project`, as Claude Code starts it."""
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "reverie", "mcp"], env=env, cwd=project
    )
    with open(project.parent / f"{project.name}-mcp.log", "a") as log:
        async with stdio_client(server, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def reverie_http(
    url: str,
    token: str,
    folder: Path | None = None,
    mode: Literal["auto", "legacy"] = "auto",
) -> AsyncIterator[Client]:
    """A client of the stack's MCP server at `url`, sending `token`, and sharing `folder` as its
    root when asked (as Claude Code shares the folder it runs in); `mode` "legacy" speaks the
    protocol of before 2026-07-28 (a session, and roots asked mid-call)."""

    async def roots(context: ClientRequestContext) -> ListRootsResult | ErrorData:
        assert folder is not None
        return ListRootsResult(roots=[Root(uri=folder.as_uri())])  # type: ignore[arg-type]

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    transport = streamable_http_client(url, http_client=http)
    async with (
        http,
        Client(transport, list_roots_callback=roots if folder else None, mode=mode) as client,
    ):
        yield client


async def text_of(session: ClientSession | Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """Whether the call failed, and the text it answered."""
    result = await session.call_tool(tool, arguments)
    return result.is_error, "\n".join(getattr(c, "text", "") for c in result.content)


async def until(condition: Callable[[], Awaitable[Any]], what: str, timeout: float = 90.0) -> Any:
    """Poll `condition` until it is truthy; its value. Fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := await condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await anyio.sleep(0.2)
    return value


def git_project(tmp_path: Path, name: str) -> Path:
    """A new git repository `name` (no remote: its project is its path)."""
    folder = tmp_path / name
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder
