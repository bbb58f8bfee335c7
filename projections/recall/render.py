"""Recalled memories as the context Claude Code injects: shaped, within budget, and fenced.

- What a prompt gets is the block projections/recall/block.py chooses (a handful of items, each
  said once; nothing when memory does not answer), in sections whose headings say what they
  hold: preferences and decisions, errors and their fixes, other facts, past sessions, what was
  said in earlier sessions (you, or the agent), and reverie's own reflection, labelled as such.
- Each item carries when it was true: a fact's valid time, a session's start, a turn's moment.
- Procedural facts stated as "X -> Y" read "When X -> Y".
- The budget: min(the level's characters, 15% of the context left), smaller as the context
  fills (full, reduced, minimal, emergency), and never over Claude Code's 10,000.
- Memory poisoning: stored text is data, fenced in one <reverie-memory> element whose preamble
  says it is not instructions, and verbatim but for the fence's own markers (schemas/text/fence.py,
  which the hook checks again before it prints).
"""

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

from projections.recall.block import Shown
from projections.recall.memories import Continuity
from schemas.kinds import HOOK_CONTEXT_LIMIT
from schemas.manifest import CompactionManifest
from schemas.text.fence import CLOSING, OPENING, escape

Pressure = Literal["full", "reduced", "minimal", "emergency"]
_BUDGETS: dict[Pressure, int] = {"full": 6_000, "reduced": 3_000, "minimal": 1_200, "emergency": 400}
# transcript bytes beyond which the context counts as that full (about 4 bytes a token, 200k tokens)
_PRESSURE_AT: tuple[tuple[int, Pressure], ...] = (
    (600_000, "emergency"),
    (400_000, "minimal"),
    (200_000, "reduced"),
)
_CONTEXT_BYTES = 800_000
_SECTIONS = (
    "Preferences and decisions",
    "Errors met and how they were fixed",
    "Facts",
    "Past sessions",
    "Said in earlier sessions",
    "Seen in earlier sessions (what the tools showed)",
    "reverie's own reflection (an opinion formed on request, not a fact)",
)
# who said it, as the model reading the block takes it ("you" would be the model itself)
_SPEAKER = {
    "prompt": "the user",
    "message": "the agent",
    "said": "the agent",
    "task": "the agent, to a subagent",
}
_DECIDED = ("decisions", "patterns")  # a fact's categories: what was decided, how things are done


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


def render(shown: Iterable[Shown], limit_chars: int) -> str:
    """The block's items in their sections, within `limit_chars`; "" when there is nothing to
    say. Past sessions are told in time order, the rest as the block ranked them."""
    sections: dict[str, list[Shown]] = {title: [] for title in _SECTIONS}
    for item in shown:
        sections[_section(item)].append(item)
    sections["Past sessions"].sort(key=lambda m: m.ts.isoformat() if m.ts else "")
    return _fence([(title, [_line(m) for m in items]) for title, items in sections.items()], limit_chars)


def _section(item: Shown) -> str:
    if item.kind in ("opinion", "observation"):
        return _SECTIONS[6]
    if item.kind == "passage":
        return _SECTIONS[5]
    if item.kind in _SPEAKER:
        return "Said in earlier sessions"
    if item.kind in ("episode", "summary"):
        return "Past sessions"
    if item.category == "errors":
        return "Errors met and how they were fixed"
    if item.kind == "preference" or item.memory_type == "procedural" or item.category in _DECIDED:
        return "Preferences and decisions"
    return "Facts"


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
        ("Solved last time", continuity.solved),  # the least needed: last, where the budget is tight
    ]
    return _fence(
        [(title, ["- " + escape(_flat(item, 800)) for item in items]) for title, items in _once(sections)],
        limit_chars,
    )


def _once(sections: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """Each item under the first title that has it: the manifest's key decisions, say, are the
    project's, which the sections after it list again."""
    seen: set[str] = set()
    kept = []
    for title, items in sections:
        new = [item for item in items if " ".join(item.split()).lower() not in seen]
        seen.update(" ".join(item.split()).lower() for item in new)
        kept.append((title, new))
    return kept


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


def _line(item: Shown) -> str:
    text = item.text
    if item.memory_type == "procedural" and item.category != "errors" and "->" in text:
        condition, _, action = text.partition("->")
        text = f"When {condition.strip()} -> {action.strip()}"
    when = f"[{item.ts:%Y-%m-%d}] " if item.ts else ""
    speaker = f"{_SPEAKER[item.kind]}: " if item.kind in _SPEAKER else ""
    return f"- {when}{speaker}{escape(text)}"
