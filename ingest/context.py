"""What the UserPromptSubmit, SessionStart and SubagentStart hooks print: memories for Claude Code.

The hook asks the warm recall service (`reverie serve`) under a hard deadline: the memories
recall finds for a prompt, what the last sessions leave to a new one, and what a kind of
subagent remembered (`reverie remember --agent TYPE`) to that subagent as it starts. When the
service is down or late, a prompt or a session falls back to the project's profile (the last
SessionStart context, kept by the service), a subagent to nothing: never an error, never a
wait past the deadline. Standard library only.
"""

from __future__ import annotations

import os
import time

from ingest import cjson
from schemas.kinds import HOOK_CONTEXT_LIMIT
from schemas.settings import Settings
from schemas.sockets import connect

DEADLINE_S = 0.3
CONTEXT_HOOKS = ("UserPromptSubmit", "SessionStart", "SubagentStart")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def hook_output(hook: str, context: str) -> bytes:
    """Claude Code's contract for a hook that adds context, fenced; empty when there is none."""
    from schemas.fence import guarded  # here: most hook events print nothing

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
        from schemas.prompt import gist  # here: most hook events ask nothing

        request["prompt"] = gist(str(payload.get("prompt") or ""))
        request["transcript_bytes"] = _size(payload.get("transcript_path"))
    if hook == "SubagentStart":  # what this kind of agent remembered: the project's profile is not its
        request["agent"] = str(payload.get("agent_type") or "")
    try:
        answer = ask(settings.recall_socket_path, request, DEADLINE_S)
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


def ask(path: str, request: dict[str, Any], deadline_s: float) -> dict[str, Any]:
    """One request to the recall service, all of it within `deadline_s` (TimeoutError past it)."""
    ends = time.monotonic() + deadline_s
    conn = connect(path, deadline_s)  # ours, served by this user: else not a byte is sent
    try:
        conn.sendall(cjson.dumps(request).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            left = ends - time.monotonic()
            if left <= 0:
                raise TimeoutError("the recall service is late")
            conn.settimeout(left)
            chunk = conn.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the recall service hung up")
            reply += chunk
    finally:
        conn.close()
    answer = cjson.loads(reply)
    if not isinstance(answer, dict):
        raise ValueError("the recall service answered something else than an object")
    return answer


def _size(path: object) -> int | None:
    try:
        return os.path.getsize(path) if isinstance(path, str) and path else None
    except OSError:
        return None
