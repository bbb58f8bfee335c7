"""Reflection's settings, question and answer: a project's disposition, what it is asked, and
the opinion `reverie reflect` forms (with the evidence for and against it)."""

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from schemas.recall import Scored

Trait = Annotated[int, msgspec.Meta(ge=1, le=5)]


class Disposition(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How a project's reflection weighs evidence (Hindsight's traits, each 1 to 5), read from the
    project's `.reverie.toml`, table `[reflect]`.

    - skepticism: how much evidence an opinion needs before it leaves 50/50;
    - literalism: how closely a memory must match the question to count;
    - empathy: how much the user's own words weigh against what the agent derived;
    - background: what the project is about, said to the LLM when one reflects.
    """

    skepticism: Trait = 3
    literalism: Trait = 3
    empathy: Trait = 3
    background: str = ""


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
