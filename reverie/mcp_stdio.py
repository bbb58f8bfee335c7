"""`reverie mcp`: the MCP tools (reverie/mcp_server.py) on stdin and stdout, for a host without
a running stack to reach over HTTP (`reverie install` registers this one then).

Its tools answer for the project of the folder the host starts it in. It starts in about the
time the MCP SDK takes to import, which is most of it: `reverie mcp` skips the command line's
parser (reverie/cli/__init__.py), and reverie's own modules load when a tool first needs them.

A line that is no JSON-RPC message gets an answer, as JSON-RPC asks, and the server goes on:
a parse error (-32700) for one that is not JSON (binary garbage included), an invalid request
(-32600) for JSON that is no message, or nested deeper than the SDK's parser goes (a few
hundred levels). The SDK's own stdio transport only logs such a line, and its caller would wait
for its own timeout. The answer carries the request's id when the line's top level names one
(a request nested too deep does), else null.
"""

import json
import os
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from schemas.settings import Settings


def serve() -> int:
    """`reverie mcp`: serve on stdin and stdout until the client goes."""
    from ingest.project import place_of
    from reverie.mcp_server import Place, build, here

    project, root = place_of({"cwd": os.getcwd()}, dict(os.environ))
    server = build(Settings.from_env(), here(Place(project, root or None)))
    anyio.run(_serve, server)
    return 0


async def _serve(server: MCPServer) -> None:
    """Serve `server` on stdio, answering the lines that are no message (see the module's docstring)."""
    lowlevel = server._lowlevel_server  # as MCPServer.run_stdio_async runs it, with a sieve in between
    sent: MemoryObjectSendStream[Any]
    sifted: MemoryObjectReceiveStream[Any]
    sent, sifted = anyio.create_memory_object_stream(0)
    async with stdio_server() as (read, write), anyio.create_task_group() as tasks:
        tasks.start_soon(_sift, read, sent, write)
        await lowlevel.run(sifted, write, lowlevel.create_initialization_options())


async def _sift(read: Any, sent: MemoryObjectSendStream[Any], write: Any) -> None:
    """Pass each message `read` gives on to `sent`; answer on `write` each line the transport
    could not read as a message (a ValidationError in its place) with a JSON-RPC error."""
    async with sent:
        async for message in read:
            if isinstance(message, ValidationError):
                await write.send(SessionMessage(refusal(message)))
            else:
                await sent.send(message)


def refusal(error: ValidationError) -> JSONRPCError:
    """The JSON-RPC error for a line the SDK could not read as a message (`error` says why)."""
    found = error.errors(include_url=False)[0]
    reason = str(found.get("msg", "unreadable"))
    line = found.get("input")
    if found.get("type") == "json_invalid" and "recursion limit" not in reason:
        return JSONRPCError(
            jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message=f"Parse error: {reason}")
        )
    said = request_id(line) if isinstance(line, str) else None
    why = "nested too deep to read" if "recursion limit" in reason else "not a JSON-RPC message"
    return JSONRPCError(
        jsonrpc="2.0", id=said, error=ErrorData(code=INVALID_REQUEST, message=f"Invalid request: {why}")
    )


def request_id(line: str) -> int | str | None:
    """The id `line`'s top-level object names (a number or a string), found by a scan that keeps
    no stack: so a request too deep to parse is still answered under its id. None if it names
    none. Linear in the line."""
    depth, at = 0, 0
    while at < len(line):
        char = line[at]
        if char == '"':
            end = _string_end(line, at)
            if end < 0:
                return None
            if depth == 1 and line[at:end] == '"id"':
                colon = _blank_skipped(line, end)
                if colon < len(line) and line[colon] == ":":
                    return _scalar(line, _blank_skipped(line, colon + 1))
            at = end
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        at += 1
    return None


def _string_end(line: str, start: int) -> int:
    """The index after the string that opens at `start`; -1 if it never closes."""
    at = start + 1
    while (at := line.find('"', at)) >= 0:
        escapes = 0
        while line[at - 1 - escapes] == "\\":
            escapes += 1
        if escapes % 2 == 0:
            return at + 1
        at += 1
    return -1


def _blank_skipped(line: str, at: int) -> int:
    while at < len(line) and line[at] in " \t\r\n":
        at += 1
    return at


def _scalar(line: str, at: int) -> int | str | None:
    """The number or string at `at`, if that is one (an id of any other kind is none)."""
    if at >= len(line) or line[at] in "{[":
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(line, at)
    except ValueError:
        return None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None
