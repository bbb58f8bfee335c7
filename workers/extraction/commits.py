"""The commits a session made: each one git took, as a fact of its project.

A commit is read from what git printed when it took it (`[branch 1a2b3c4] subject`), so a
commit a hook refused, or one tried again after a fix, counts once, for the try git took.
Its message's body (from `-m "..."` or a heredoc) says what the commit holds.
"""

import re
from collections.abc import Iterable, Iterator

import msgspec

from schemas import kinds
from schemas.events import Event

_TAKEN = re.compile(
    r"^\[(?P<branch>[^\]\s]+)(?: \(root-commit\))? (?P<sha>[0-9a-f]{7,40})\] (?P<subject>.+)$", re.M
)
_HEREDOC = re.compile(r"<<\s*'?(?P<tag>[A-Z]+)'?\n(?P<body>[\s\S]*?)\n\s*(?P=tag)\b")
_DASH_M = re.compile(r"""-m\s+(?:"(?P<double>(?:[^"\\]|\\.)*)"|'(?P<single>[^']*)')""")
_BODY_LINES = 6  # of the message's body, kept beside the subject


class Commit(msgspec.Struct, frozen=True):
    project: str
    sha: str
    branch: str
    subject: str
    body: str  # the message's first lines after the subject
    event_id: str


def _output(response: object) -> str:
    if isinstance(response, dict):
        return "\n".join(str(response.get(k) or "") for k in ("stdout", "output", "content"))
    return response if isinstance(response, str) else ""


def _message(command: str) -> str:
    """The commit message a `git commit` command gives, if it gives one inline."""
    if heredoc := _HEREDOC.search(command):
        return heredoc.group("body")
    if dash_m := _DASH_M.search(command):
        if (double := dash_m.group("double")) is None:
            return dash_m.group("single")
        return double.replace('\\"', '"').replace("\\n", "\n")
    return ""


def _body(message: str, subject: str) -> str:
    lines = [line.strip() for line in message.strip().splitlines()]
    if lines and lines[0] == subject.strip():
        lines = lines[1:]
    kept = [line for line in lines if line and not line.startswith(("Co-Authored-By:", "Signed-off-by:"))]
    return "\n".join(kept[:_BODY_LINES])


def commits(events: Iterable[Event]) -> Iterator[Commit]:
    """Each commit git took among `events`' shell commands."""
    for event in events:
        if event.kind != kinds.TOOL_USED:
            continue
        payload = msgspec.json.decode(event.payload)
        command = (payload.get("tool_input") or {}).get("command")
        if not isinstance(command, str) or "git" not in command or "commit" not in command:
            continue
        for taken in _TAKEN.finditer(_output(payload.get("tool_response"))):
            subject = taken.group("subject").strip()
            yield Commit(
                event.project,
                taken.group("sha"),
                taken.group("branch"),
                subject,
                _body(_message(command), subject),
                event.id,
            )
