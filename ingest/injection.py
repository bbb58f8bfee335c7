"""What the UserPromptSubmit, SessionStart and SubagentStart hooks print: memories for Claude Code.

The hook asks the warm recall service (`reverie serve`) under a hard deadline: the memories
recall finds for a prompt, what the last sessions leave to a new one, and what a kind of
subagent remembered (`reverie remember --agent TYPE`) to that subagent as it starts. When the
service is down or late, a prompt or a session falls back to the project's profile (the last
SessionStart context, kept by the service), a subagent to nothing: never an error, never a
wait past the deadline. Standard library only.
"""

from __future__ import annotations

import _socket
import os
import time

from ingest import cjson
from ingest.sockets import connect
from schemas.kinds import HOOK_CONTEXT_LIMIT
from schemas.settings import Settings

# How long a hook waits for the service's answer. On an idle machine the answer comes in tens of
# milliseconds; with 8 processes spinning on 2 cores the whole hook took 0.38 s at the median and
# 0.74 s at p95 (benchmarks/recall_latency.py --busy 8), and the 0.3 s this was before sent
# prompts on a busy machine to the stale profile. Claude Code gives a hook 10 s (as installed),
# the hook's own watchdog 5 (ingest/hook.py): 2 s is well within both, and is seen only when late.
DEADLINE_S = 2.0
CONTEXT_HOOKS = ("UserPromptSubmit", "SessionStart", "SubagentStart")
# A prompt this long (characters) or shorter goes to the service as it is, which reads its gist;
# a longer one is cut to its gist here first (schemas/text/gist.py), whose `re` costs a hook
# about 5 ms. At most 192 KB as JSON (12 bytes a character at worst), well within a request line.
SENT_WHOLE = 16_000
# the hooks that only tell the service: it writes the session's compaction manifest
MANIFEST_HOOKS = ("Stop", "PreCompact")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def hook_output(hook: str, context: str) -> bytes:
    """Claude Code's contract for a hook that adds context, fenced; empty when there is none."""
    from schemas.text.fence import guarded  # here: most hook events print nothing

    text = guarded(context, HOOK_CONTEXT_LIMIT)  # fenced, whatever the service or the profile said
    if not text:
        return b""
    output = {"hookSpecificOutput": {"hookEventName": hook, "additionalContext": text}}
    return cjson.dumps(output).encode() + b"\n"


def context_for(settings: Settings, hook: str, payload: dict[str, Any], project: str) -> str:
    """The context to inject for this hook event: from the service, else the profile, else ""."""
    request = {
        "hook": hook,
        "project": project,
        "session_id": payload.get("session_id"),
        "deadline_s": DEADLINE_S,
    }
    if hook == "UserPromptSubmit":
        request["prompt"] = prompt_sent(str(payload.get("prompt") or ""))
        request["transcript_bytes"] = _size(payload.get("transcript_path"))
    if hook == "SubagentStart":  # what this kind of agent remembered: the project's profile is not its
        request["agent"] = str(payload.get("agent_type") or "")
    if hook == "SessionStart" and isinstance(payload.get("source"), str):
        request["source"] = payload["source"]
    try:
        answer = ask_service(settings, request, DEADLINE_S)
        text = answer.get("context")
        if isinstance(text, str):
            return text
    except (OSError, ValueError):
        pass
    if hook == "SubagentStart":
        return ""
    try:
        with open(settings.profile_path(project), encoding="utf-8") as f:
            return f.read(HOOK_CONTEXT_LIMIT)
    except OSError:
        return ""


def prompt_sent(prompt: str) -> str:
    """What the service is sent of `prompt`: all of it, or the gist of a long one."""
    if len(prompt) <= SENT_WHOLE:
        return prompt
    from schemas.text.gist import gist  # here: a prompt this long is rare

    return gist(prompt)


def tell(settings: Settings, hook: str, payload: dict[str, Any], project: str) -> None:
    """Have the service write the session's compaction manifest, waiting for no answer: the
    request is sent (over TCP, once the service proved it holds the token), and the hook goes on
    (the service down, or slow, costs it nothing). Stop's sends the agent's last message with
    it, redacted and cut as its event's: a second redaction, on the Stop hook only."""
    request = {"hook": hook, "project": project, "session_id": payload.get("session_id")}
    message = payload.get("last_assistant_message")
    if isinstance(message, str):  # Stop's: the next steps it names, which no snapshot knows yet
        from ingest.redact import redact_text
        from ingest.truncate import cut

        request["last_message"] = cut(message, clean=redact_text)  # as its event keeps it
    try:
        conn = _open(settings, 0.05)
        try:
            conn.sendall(_request_line(conn, settings, request, time.monotonic() + DEADLINE_S))
        finally:
            conn.close()
    except (OSError, ValueError):
        pass


def ask_service(settings: Settings, request: dict[str, Any], deadline_s: float) -> dict[str, Any]:
    """One request to the recall service these settings name, within `deadline_s`. Over TCP the
    service must first prove it holds the token (ingest/handshake.py): one that does not is sent
    nothing of the request, and is taken for a service that is down (PermissionError)."""
    ends = time.monotonic() + deadline_s
    conn = _open(settings, deadline_s)
    try:
        return _exchange(conn, _request_line(conn, settings, request, ends), ends)
    finally:
        conn.close()


def _request_line(conn: _socket.socket, settings: Settings, request: dict[str, Any], ends: float) -> bytes:
    """`request` as the service takes it: one JSON line, over TCP proved to come from a holder of
    the token, once the service proved it holds it too."""
    data = cjson.dumps(request).encode()
    if not settings.recall_url:  # our own unix socket: its directory and peer were checked
        return data + b"\n"
    token = settings.recall_token
    if not token:
        raise PermissionError(
            "REVERIE_RECALL_TOKEN is not set: the recall service over TCP cannot be trusted"
        )
    from ingest import handshake  # here: hmac loads OpenSSL, which the unix socket needs not

    mine = handshake.nonce()
    conn.sendall(handshake.HELLO + b" " + mine + b"\n")
    theirs, _, proof = _read_line(conn, ends, handshake.LINE_LIMIT).rstrip(b"\n").partition(b" ")
    if not handshake.is_nonce(theirs) or not handshake.matches(
        handshake.service_proof(token, mine, theirs), proof
    ):
        raise PermissionError(f"{settings.recall_url} did not prove it holds the token: nothing was sent")
    return handshake.client_proof(token, mine, theirs, data) + b" " + data + b"\n"


def _open(settings: Settings, timeout: float) -> _socket.socket:
    """A stream to the recall service: over TCP to REVERIE_RECALL_URL (a compose stack's, as
    published on this host), else to this user's own unix socket, checked (ingest/sockets.py)."""
    if not settings.recall_url:
        return connect(settings.recall_socket_path, timeout)
    from ingest.resp import connect_tcp  # names resolve within the timeout, never blocking the hook

    host, _, port = settings.recall_url.removeprefix("tcp://").rstrip("/").rpartition(":")
    try:
        return connect_tcp(host.strip("[]"), int(port), timeout)
    except (OSError, ValueError) as e:
        raise OSError(f"cannot reach the recall service at {settings.recall_url}: {e}") from None


def ask(path: str, request: dict[str, Any], deadline_s: float) -> dict[str, Any]:
    """One request to the recall service on the unix socket `path`, all of it within
    `deadline_s` (TimeoutError past it)."""
    ends = time.monotonic() + deadline_s
    conn = connect(path, deadline_s)  # ours, served by this user
    try:
        return _exchange(conn, cjson.dumps(request).encode() + b"\n", ends)
    finally:
        conn.close()


def _exchange(conn: _socket.socket, line: bytes, ends: float) -> dict[str, Any]:
    """Send the request `line`, and read the service's answer by `ends` (time.monotonic)."""
    conn.sendall(line)
    answer = cjson.loads(_read_line(conn, ends))
    if not isinstance(answer, dict):
        raise ValueError("the recall service answered something else than an object")
    return answer


def _read_line(conn: _socket.socket, ends: float, limit: int | None = None) -> bytes:
    """One line from `conn` by `ends` (TimeoutError past it), ValueError past `limit` bytes."""
    line = b""
    while not line.endswith(b"\n"):
        if limit is not None and len(line) > limit:
            raise ValueError(f"the recall service sent a line longer than {limit} bytes")
        left = ends - time.monotonic()
        if left <= 0:
            raise TimeoutError("the recall service is late")
        conn.settimeout(left)
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the recall service hung up")
        line += chunk
    return line


def _size(path: object) -> int | None:
    try:
        return os.path.getsize(path) if isinstance(path, str) and path else None
    except OSError:
        return None
