"""Recalled memories as the context Claude Code injects: shaped, within budget, and fenced.

- At most 5 thematic chunks (Baddeley: working memory holds a handful of chunks): decisions
  and procedures, facts by category, what happened (in time order), opinions and
  observations, earlier prompts and answers.
- Procedural facts read "When X -> Y"; episodic memories are listed in time order.
- The budget: min(6,000 characters, 15% of the context left), smaller as the context fills
  (full, reduced, minimal, emergency), and never over Claude Code's 10,000.
- Memory poisoning: stored text is data. It is escaped (no tag can be closed or opened from
  inside) and fenced in one <reverie-memory> element whose preamble says it is not
  instructions (schemas/fence.py, which the hook checks again before it prints).
"""

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

from projections.recall.memories import Continuity
from schemas.fence import CLOSING, OPENING, escape
from schemas.kinds import HOOK_CONTEXT_LIMIT
from schemas.manifest import CompactionManifest
from schemas.recall import Scored

Pressure = Literal["full", "reduced", "minimal", "emergency"]
_BUDGETS: dict[Pressure, int] = {"full": 6_000, "reduced": 3_000, "minimal": 1_200, "emergency": 400}
# transcript bytes beyond which the context counts as that full (about 4 bytes a token, 200k tokens)
_PRESSURE_AT: tuple[tuple[int, Pressure], ...] = (
    (600_000, "emergency"),
    (400_000, "minimal"),
    (200_000, "reduced"),
)
_CONTEXT_BYTES = 800_000
_CHUNKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Decisions and how things are done", ("preference", "procedural")),
    ("Facts", ("fact",)),
    ("What happened", ("episode", "remembered")),
    ("Opinions and observations", ("opinion", "observation")),
    ("Earlier in the conversation", ("prompt", "message")),
)


def pressure(transcript_bytes: int | None) -> Pressure:
    """How full the context is, judged by the transcript's size."""
    for threshold, level in _PRESSURE_AT:
        if (transcript_bytes or 0) >= threshold:
            return level
    return "full"


def budget(level: Pressure, transcript_bytes: int | None = None) -> int:
    """Characters to spend: the level's budget, at most 15% of the context left."""
    left = max(_CONTEXT_BYTES - (transcript_bytes or 0), 0)
    return min(_BUDGETS[level], int(0.15 * left) if transcript_bytes else _BUDGETS[level], HOOK_CONTEXT_LIMIT)


def render(memories: Iterable[Scored], limit_chars: int) -> str:
    """The memories as at most 5 chunks within `limit_chars`; "" when there is nothing to say.

    Procedural facts ("X -> Y" or "X: Y") are phrased "When X -> Y".
    """
    chunks: dict[str, list[Scored]] = {title: [] for title, _ in _CHUNKS}
    for memory in memories:
        kind = "procedural" if memory.memory_type == "procedural" else memory.kind
        title = next((t for t, kinds in _CHUNKS if kind in kinds), "Facts")
        chunks[title].append(memory)
    chunks["What happened"].sort(key=lambda m: m.ts.isoformat() if m.ts else "")
    return _fence([(title, [_line(m) for m in members]) for title, members in chunks.items()], limit_chars)


def render_continuity(
    continuity: Continuity, limit_chars: int, manifest: CompactionManifest | None = None
) -> str:
    """What a new session should know of the last ones, fenced like recalled memories; after a
    compaction or a resume, where this session stood first (its `manifest`)."""
    stood = manifest or CompactionManifest(session_id="", project="", written_at=datetime.now(UTC), at="Stop")
    sections = [
        ("Where this session stood: its next steps", stood.next_steps),
        ("Where this session stood: blockers", stood.blockers),
        ("Where this session stood: files it touched", stood.files_touched),
        ("Where this session stood: key decisions", stood.key_decisions),
        ("Last session", [continuity.last_summary] if continuity.last_summary else []),
        ("Key decisions", continuity.decisions),
        ("Files touched lately", continuity.files),
        ("Blockers last time", continuity.blockers),
        ("Preferences", continuity.preferences),
        ("Recurring failures", continuity.failures),
    ]
    return _fence(
        [(title, ["- " + escape(_flat(item, 800)) for item in items]) for title, items in sections],
        limit_chars,
    )


def render_agent_memories(agent: str, memories: list[str], limit_chars: int) -> str:
    """What an agent remembered, for the subagent starting, fenced like recalled memories."""
    return _fence(
        [(f"What {_flat(agent, 80)} remembered", ["- " + escape(_flat(m, 800)) for m in memories])],
        limit_chars,
    )


def _fence(sections: list[tuple[str, list[str]]], limit_chars: int) -> str:
    """Titled sections of lines in the <reverie-memory> fence, as many lines as `limit_chars` holds."""
    lines: list[str] = []
    used = len(OPENING) + len(CLOSING) + 1
    for title, items in sections:
        for i, item in enumerate(items):
            line = (f"## {title}\n" if i == 0 else "") + item
            if used + len(line) + 1 > limit_chars:
                break
            lines.append(line)
            used += len(line) + 1
    return OPENING + "\n".join(lines) + "\n" + CLOSING if lines else ""


def _flat(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _line(memory: Scored) -> str:
    text = _flat(memory.text, 600)
    if memory.memory_type == "procedural":
        condition, _, action = text.partition("->") if "->" in text else text.partition(":")
        text = f"When {condition.strip()} -> {action.strip()}" if action else text
    when = f"[{memory.ts:%Y-%m-%d}] " if memory.ts else ""
    return f"- {when}{escape(text)} ({memory.kind}, {', '.join(memory.sources)})"
