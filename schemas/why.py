"""Why memory holds something: `reverie why ID`'s answer, for a terminal or as JSON.

A fact, an entity or an episode was made by derived events; each names the events it came
from (`caused_by`), down to what a hook or the import observed, and where Claude Code's
transcript records it (its file and line). A memory no worker derived (remembered, a prompt,
a message) is an observed event itself: the answer names that event, who recorded it and
where.
"""

from datetime import datetime
from typing import Any, Literal

import msgspec

What = Literal["fact", "entity", "episode", "memory"]
EXCERPT = 160  # the most characters of an excerpt


def cut(text: str) -> str:
    """`text` as an excerpt: on one line, at most EXCERPT characters."""
    line = " ".join(text.split())
    return line if len(line) <= EXCERPT else line[: EXCERPT - 1] + "…"


class Source(msgspec.Struct, kw_only=True):
    """An event a derivation came from; an observed one says where its transcript records it."""

    event_id: str
    kind: str
    ts: datetime
    project: str
    session_id: str | None = None
    by: str | None = None  # who recorded it: claude-code (a hook), import, cli, mcp, worker
    excerpt: str = ""  # what it says, in a line
    transcript: str | None = None
    line: int | None = None
    caused_by: list["Source"] = []  # a derived event's own causes


class Derivation(msgspec.Struct, kw_only=True):
    """A derived event about the thing: its assertion, a reconsolidation, a supersession..."""

    event_id: str
    kind: str
    ts: datetime
    recorded_at: datetime
    says: str = ""  # its description, reason or name
    caused_by: list[Source] = []


class Why(msgspec.Struct, kw_only=True):
    id: str
    what: What
    title: str
    details: dict[str, Any] = {}  # the thing as memory holds it now
    derivations: list[Derivation] = []
    # the event that is the memory itself, when no worker derived it: what `reverie remember` or
    # the MCP server recorded, a prompt, an agent's message
    recorded: Source | None = None
