"""One episode per session: its goal, what was done, and how it ended.

The title is the goal: the first thing the user asked (its first sentence), or what a
compaction summary says the user's primary request was. The summary says what was done (the
commits git took, the files changed, the errors the summaries name, the errors the session
solved and how, those it left, the first paragraph of the agent's last message) and the
outcome, from what happened (schemas/outcomes.py): the last word on the work is a check that
failed (failure) or passed after failing (success), a commit (success), or the user's
complaint or thanks; success with an error left unresolved is partial, and so is a failure
after a commit; nothing telling leaves it unknown. An error a compaction summary calls
unresolved counts as resolved when the session's tests and builds pass after that summary, to
its end: the tools have the last word.
"""

import hashlib
import re
from collections.abc import Iterator

import msgspec

from schemas import kinds, memory, outcomes
from schemas.events import Event
from schemas.text.harness import clean, is_noise, unmarked
from workers.evidence.failures import CHECKS, runs
from workers.evidence.tool_uses import tool_uses
from workers.extraction.commits import commits
from workers.extraction.files import entity_id, mentions
from workers.extraction.steps import steps
from workers.extraction.summaries import bullets

_FIRST_SENTENCE = re.compile(r"^.{8,160}?(?:[.!?](?=\s|$)|\n|$)", re.S)
_INTENT = re.compile(r"Primary Request and Intent:\s*\n\s*(?:[-*]\s*)?(?P<intent>[^\n]{20,})")
_EDITS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
_LISTED = 5  # commits named in the summary
_FILES = 30  # files named in it
_TOLD = 3  # errors solved, and errors left, named in it (the last ones)
_WORDS_MAX = 300
_HEADING = re.compile(r"#{1,6} [^\n]*")


def episode_id(project: str, session_id: str) -> str:
    digest = hashlib.blake2b(f"{project}\0{session_id}".encode(), digest_size=10).hexdigest()
    return f"episode:{digest}"


def _text(event: Event, field: str) -> str:
    value = msgspec.json.decode(event.payload).get(field)
    return value if isinstance(value, str) else ""


def _goal(events: list[Event]) -> str | None:
    for event in events:
        if event.kind != kinds.PROMPT_SUBMITTED or event.agent != "main":
            continue
        if not is_noise(prompt := _text(event, "prompt")):
            sentence = _FIRST_SENTENCE.match(clean(prompt))
            return (sentence.group() if sentence else clean(prompt)[:160]).strip().rstrip(".!?")
    return None


def _intent(events: list[Event]) -> str | None:
    for event in events:
        if event.kind in (kinds.SUBAGENT_STOPPED, kinds.COMPACTION_FINISHED):
            text = _text(event, "last_assistant_message") or _text(event, "compact_summary")
            if found := _INTENT.search(text):
                return found.group("intent").strip()
    return None


def _last_words(events: list[Event]) -> str | None:
    """How the agent's last turn ended, in its own words: the first paragraph of its last
    message (the agent's own account of what it did), cut to a few lines."""
    for event in reversed(events):
        if event.kind == kinds.ASSISTANT_STOPPED and event.agent == "main":
            text = clean(_text(event, "last_assistant_message"))
            said = [p.strip() for p in text.split("\n\n") if p.strip() and not _HEADING.fullmatch(p.strip())]
            if said:
                paragraph = " ".join(unmarked(said[0]).split())
                return paragraph if len(paragraph) <= _WORDS_MAX else paragraph[: _WORDS_MAX - 1] + "…"
    return None


def _checks(events: list[Event]) -> list[tuple[int, bool]]:
    """Where in `events` each test, build or lint ran, and whether it failed."""
    at = {e.id: i for i, e in enumerate(events)}
    return [(at[r.event_id], r.failed) for r in runs(events) if CHECKS.match(r.key)]


def _edited(events: list[Event]) -> list[str]:
    edits = [use.event for use in tool_uses(events) if use.name in _EDITS]
    return list(dict.fromkeys(m.path for m in mentions(edits)))


def episodes(events: list[Event]) -> Iterator["Drawn"]:
    """The episode of each session among `events` (all of its events): the episode, its project,
    and the events it was drawn from: the session's own steps, as Claude Code's hooks see them
    (not what was recalled, remembered or stashed about it, before or after its end: the same
    session gives the same episode whenever it is drawn)."""
    by_session: dict[str, list[Event]] = {}
    for event in sorted(events, key=lambda e: (e.ts, e.id)):
        if event.session_id and event.kind in _STEPS:
            by_session.setdefault(event.session_id, []).append(event)
    for session_id, session in by_session.items():
        if (found := _episode(session_id, session)) is not None:
            yield found


_STEPS = frozenset(kinds.HOOK_KINDS.values())
Drawn = tuple[memory.EpisodeRecorded, str, tuple[str, ...]]


def _episode(session_id: str, session: list[Event]) -> Drawn | None:
    goal = _goal(session)
    if goal is None:
        return None
    project = session[0].project
    taken = list({c.sha: c for c in commits(session)}.values())
    errors = [b for b in bullets(session) if b.section == "errors"]
    checks = _checks(session)
    passed_at = (
        max((i for i, failed in checks if not failed), default=-1) if checks and not checks[-1][1] else -1
    )
    at = {e.id: i for i, e in enumerate(session)}
    # a summary's "unresolved" is overruled by the checks that pass after it, to the session's end
    unsolved = [b for b in errors if not b.solved and at[b.event_id] > passed_at]
    edited = _edited(session)
    reading = outcomes.read(steps(session), unresolved=bool(unsolved))
    outcome = reading.outcome
    lines = [f"Goal: {_intent(session) or goal}"]
    if taken:
        lines.append("Commits: " + _listed([c.subject for c in taken], "; "))
    if edited:  # a line each, as they were named: what a later question about a file finds
        lines += ["Files changed:", *(f"- {path}" for path in edited[:_FILES])]
        lines += [f"- and {len(edited) - _FILES} more"] if len(edited) > _FILES else []
    if errors:
        lines.append(f"Errors met: {len(errors)}, {len(unsolved)} left unresolved")
    lines += [f"Solved error: {e.told()}" for e in reading.solved[-_TOLD:]]
    lines += [f"Blocker: {e.told()}" for e in reading.blockers[-_TOLD:]]
    if ended := _last_words(session):
        lines.append(f"Last words: {ended}")
    if reading.told_by:
        lines.append(f"Told by: {reading.told_by}")
    lines.append(f"Outcome: {outcome}")
    recorded = memory.EpisodeRecorded(
        episode_id=episode_id(project, session_id),
        session_id=session_id,
        title=goal,
        summary="\n".join(lines),
        started_at=session[0].ts,
        ended_at=session[-1].ts,
        outcome=outcome,
        entities=[entity_id("file", path, project) for path in edited],
    )
    # what it was drawn from: its start and end, its commits, and what told its outcome
    told = [reading.told_at] if reading.told_at else []
    causes = tuple(dict.fromkeys([session[0].id, *(c.event_id for c in taken), *told, session[-1].id]))
    return recorded, project, causes


def _listed(items: list[str], separator: str) -> str:
    more = f" and {len(items) - _LISTED} more" if len(items) > _LISTED else ""
    return separator.join(items[:_LISTED]) + more
