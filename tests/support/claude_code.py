"""The real Claude Code CLI, pinned, and a fake of Anthropic's Messages API on loopback for it to
talk to: the tests (and benchmarks/claude_session.py) run real `claude` sessions against a
scripted model."""

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.http import QuietHandler, on_loopback

Block = dict[str, Any]  # a content block of the Messages API: text, or tool_use


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def tool_use(name: str, arguments: dict[str, Any], id: str = "toolu_1") -> Block:
    return {"type": "tool_use", "id": id, "name": name, "input": arguments}


class FakeMessagesAPI:
    """Anthropic's Messages API on loopback, as Claude Code streams it (server-sent events), for
    the real `claude` CLI (ANTHROPIC_BASE_URL=`url`): every request to /v1/messages is kept in
    `requests` and answered with the one block `respond` makes of it (a tool_use block ends the
    turn asking for that tool), or with `status`, if not 200, for every request."""

    def __init__(self, respond: Callable[[dict[str, Any]], Block], status: int = 200) -> None:
        self.respond, self.status = respond, status
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.requests.append({"path": self.path, **body})
                if "count_tokens" in self.path:
                    self.reply(200, "application/json", b'{"input_tokens": 10}')
                elif fake.status != 200:
                    self.reply(
                        fake.status, "application/json", b'{"type":"error","error":{"type":"api_error"}}'
                    )
                else:
                    self.reply(200, "text/event-stream", fake.stream(body))

        self.server = on_loopback(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stream(self, body: dict[str, Any]) -> bytes:
        block = self.respond(body)
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            stop = "tool_use"
        else:
            start, delta, stop = (
                {"type": "text", "text": ""},
                {"type": "text_delta", "text": block["text"]},
                "end_turn",
            )
        message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
        message |= {
            "model": body.get("model"),
            "stop_reason": None,
            "usage": {"input_tokens": 1500, "output_tokens": 1},
        }
        events = [
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 200}},
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def tool_results(body: dict[str, Any]) -> list[Block]:
    """The tool_result blocks a Messages API request carries."""
    return [
        block
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def said(body: dict[str, Any]) -> str:
    """All the text a Messages API request carries (system prompt, messages, tool results), as JSON."""
    return json.dumps({"system": body.get("system"), "messages": body.get("messages")}, ensure_ascii=False)


# The real Claude Code CLI, pinned, from the npm registry (its native binary comes as an optional
# dependency), cached in the checkout's ignored .cache/ folder.
CLAUDE_CODE = "2.1.328"


def claude_code(version: str = CLAUDE_CODE) -> str:
    """Claude Code's executable, installed from the npm registry the first time."""
    folder = Path(__file__).resolve().parents[2] / ".cache" / f"claude-code-{version}"
    executable = folder / "node_modules" / ".bin" / "claude"
    if not executable.exists():
        package = f"@anthropic-ai/claude-code@{version}"
        npm = ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", package]
        subprocess.run(npm, check=True, capture_output=True, timeout=900)
    found = subprocess.run([executable, "--version"], capture_output=True, text=True, check=True).stdout
    if not found.startswith(version):
        raise RuntimeError(f"{executable} is Claude Code {found.strip()}, not {version}")
    return str(executable)
