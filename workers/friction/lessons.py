"""What the sessions' friction teaches: antigen candidates from the BAD sessions, and the
behavioural preferences the user shows by what they stop the agent doing.

An antigen candidate is one anchor of a BAD session (a signal among `ANCHORS`), with what went
wrong around it: the tools called last before it, the last command that failed before it (its
key and error signature), the user's last words before it and their next, and a candidate rule to
avoid it. Candidates group by (signal, tools, command, signature) for review.

A behavioural preference is what the user keeps refusing or interrupting: each turn in which
they stop a call of one command (a shell command's program and subcommand, else the tool) is one
observation; at `MEDIUM` observations the preference is offered ("Ask the user before running
`git push`"), at `HIGH` it is high-confidence. Its strength is the Laplace share
observations / (observations + 2), as workers/dynamics/crystallize.py gives stated preferences
(0.6 at 3, 0.71 at 5): one scale for both. It is a `preference.crystallized` event whose id
follows from its statement and project, so a run twice, or with more evidence, updates one
preference.
"""

from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

import msgspec

from schemas import kinds, memory
from schemas.events import Event
from workers.dynamics.crystallize import preference_id
from workers.evidence.failures import command_key, runs, signature
from workers.evidence.tool_uses import tool_uses
from workers.friction.signals import Friction, Occurrence, Turn, own_words, payload, refused, turns
from workers.thinking.follower import Derived

ANCHORS = frozenset(
    ["user_intervention", "session_abandoned", "false_success", "no_resolution", "tool_loop", "rapid_exit",
     "interrupt_cascade", "user_curse"]
)  # fmt: skip
MEDIUM = 3
HIGH = 5
_TOOLS = 5  # the calls before an anchor an antigen names
_WORDS = 300

Confidence = Literal["medium", "high"]


class Antigen(msgspec.Struct, frozen=True):
    session_id: str
    ts: str
    signal: str
    tools: tuple[str, ...]  # the last calls before the anchor, oldest first
    command: str  # the last call the user stopped before it, else the last command that failed ("")
    error: str  # its signature
    user_said: tuple[str, ...]  # the user's words in the anchor's turn and the next
    evidence: str
    rule: str


class Behaviour(msgspec.Struct, frozen=True):
    project: str
    statement: str
    observations: int
    confidence: Confidence
    strength: float
    caused_by: tuple[str, ...]


def antigens(friction: Friction, events: Sequence[Event]) -> list[Antigen]:
    """The antigen candidates of one BAD session (none for another)."""
    if friction.quality != "BAD":
        return []
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    at = {e.id: i for i, e in enumerate(ordered)}
    cut = turns(ordered)
    found = []
    for anchor in friction.occurrences:
        if anchor.signal in ANCHORS and anchor.event_id in at:
            found.append(_antigen(friction.session_id, anchor, ordered[: at[anchor.event_id] + 1], cut))
    return found


def _antigen(session_id: str, anchor: Occurrence, before: list[Event], cut: list[Turn]) -> Antigen:
    tools = tuple(use.name for use in tool_uses(before))[-_TOOLS:]
    failed = [run for run in runs(before) if run.failed]
    command, error = (failed[-1].key, signature(failed[-1].output)) if failed else ("", "")
    if stopped := list(_stopped(before)):  # what the user stopped says more than what failed before
        command, error = stopped[-1], STOPPED
    said = [w for t in cut if t.prompt is not None and (w := own_words(t.text))]
    before_n = sum(1 for t in cut if t.prompt is not None and own_words(t.text) and t.prompt.ts <= anchor.ts)
    user_said = tuple(w[:_WORDS] for w in said[max(before_n - 1, 0) : before_n + 1])
    return Antigen(
        session_id, anchor.ts.isoformat(), anchor.signal, tools, command, error, user_said, anchor.evidence,
        _rule(anchor, tools, command, error),
    )  # fmt: skip


def _rule(anchor: Occurrence, tools: tuple[str, ...], command: str, error: str) -> str:
    if error == STOPPED:
        return f"Ask before {command}: the user stopped it ({anchor.signal})"
    failing = f'`{command}` failing with "{error}"' if command else ""
    if anchor.signal == "false_success":
        return f"Do not say it is done before the check passes ({anchor.evidence})"
    if anchor.signal == "no_resolution":
        return f"Do not leave {failing}: fix it or say it is not fixed"
    if anchor.signal == "tool_loop":
        return f"Do not repeat a call that gives the same result: {anchor.evidence}"
    stopped = " then ".join(tools[-2:]) or "the agent"
    return f"Avoid what the user stopped ({anchor.signal}): {stopped}" + (
        f", after {failing}" if failing else ""
    )


def group_key(antigen: Antigen) -> tuple[str, str, str, str]:
    """What makes candidates one pattern for review."""
    return (antigen.signal, ",".join(antigen.tools[-3:]), antigen.command, antigen.error)


STOPPED = "stopped by the user"  # an antigen's error when the user refused or interrupted the call


def _stopped(turn_events: Iterable[Event]) -> dict[str, Event]:
    """What the user stopped (in one turn, or before an anchor): each command (or tool) once, in
    order, with its call."""
    stopped: dict[str, Event] = {}
    for use in tool_uses(turn_events):
        if refused(use.event) or payload(use.event).get("is_interrupt") is True:
            command = use.given.get("command")
            key = command_key(command) if use.name == "Bash" and isinstance(command, str) else ""
            stopped.setdefault(f"running `{key}`" if key else f"using {use.name}", use.event)
    return stopped


def behaviours(sessions: Iterable[Sequence[Event]]) -> list[Behaviour]:
    """The behavioural preferences of every project the sessions show, at MEDIUM observations or
    more, most observed first."""
    observed: dict[tuple[str, str], list[str]] = {}
    for events in sessions:
        ordered = sorted(events, key=lambda e: (e.ts, e.id))
        for turn in turns(ordered):
            for what, event in _stopped(turn.events).items():
                observed.setdefault((event.project, what), []).append(event.id)
    found = [
        Behaviour(
            project,
            f"Ask the user before {what}",
            len(ids),
            "high" if len(ids) >= HIGH else "medium",
            round(len(ids) / (len(ids) + 2), 6),
            tuple(sorted(ids)),
        )
        for (project, what), ids in sorted(observed.items())
        if len(ids) >= MEDIUM
    ]
    return sorted(found, key=lambda b: (-b.observations, b.project, b.statement))


def crystallized(found: Iterable[Behaviour]) -> Iterator[Derived]:
    """The `preference.crystallized` events the behavioural preferences are."""
    for behaviour in found:
        preference = memory.PreferenceCrystallized(
            preference_id=preference_id(behaviour.project, behaviour.statement),
            statement=behaviour.statement,
            strength=behaviour.strength,
            evidence=behaviour.observations,
        )
        yield Derived(
            kinds.PREFERENCE_CRYSTALLIZED,
            preference,
            behaviour.project,
            behaviour.caused_by,
            None,
            preference.preference_id,
        )
