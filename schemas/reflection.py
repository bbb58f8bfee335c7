"""Reflection's question and answer: what it is asked, and the opinion `reverie reflect` forms
(with the evidence for and against it); its settings, a project's disposition, are in
schemas/disposition.py."""

from datetime import datetime
from typing import Literal

import msgspec

from schemas.disposition import Disposition
from schemas.recall import Scored


class Asked(msgspec.Struct, frozen=True, kw_only=True):
    """A question put to reflection: what recall found on it in the project, and the project's
    disposition."""

    query: str
    project: str
    evidence: list[Scored]
    disposition: Disposition = msgspec.field(default_factory=Disposition)


Stance = Literal["supports", "contradicts"]


class Evidence(msgspec.Struct, frozen=True):
    memory_id: str
    kind: str
    text: str
    stance: Stance
    weight: float  # what it counts for, after the disposition
    ts: datetime | None = None


class Reflection(msgspec.Struct, frozen=True, kw_only=True):
    """An opinion on a question, from what memory holds on it."""

    query: str
    opinion_id: str
    statement: str
    confidence: float  # that the statement holds, 0.5 when memory cannot tell
    supporting: list[Evidence]
    contradicting: list[Evidence]  # surfaced, never hidden
    formed_by: Literal["evidence", "llm"] = "evidence"
    revised_from: float | None = None  # the confidence it had before, when this revised it
    promote: bool = False  # above 0.9: worth a line in CLAUDE.md's memory section
