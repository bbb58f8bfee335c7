"""Seed 004's 14 friction signals, found in one session's events, and the session's score.

A session is read as the hooks record it and as ingest/transcripts.py reads a transcript: the
same events either way, sorted by (ts, id). A *turn* starts at each of the main agent's
prompts that is the user's (their own words, or Claude Code's interruption marker); a *refusal*
is a tool call the user declined or stopped (Claude Code answers "User rejected tool use",
"The user doesn't want to proceed", "Interrupted by user"); a *command* is a shell run as
workers/evidence/failures.py reads it (Claude Code's own cancellations are none).

Each signal, its weight, and what in the events triggers it:
- user_intervention (10): the user takes over: a prompt runs a stash command (`/stash`,
  `/reverie:stash`), or the user refuses tool calls (once per turn).
- session_abandoned (10): the session is over (ended, or idle for `IDLE`) and the user's last
  word in it was an interruption, a refusal or a curse: they stopped the agent, never came back.
- false_success (8): the agent ends a turn claiming success ("done", "fixed", "all tests
  pass"...) and the next command fails, or the user's next prompt is a negation or a curse.
- no_resolution (8): the session's last failed command is never followed by a run of the same
  command that passes (once per session).
- tool_loop (6): one agent makes the same call (tool and input) `LOOP` times or more in a turn,
  with the same outcome each time (once per call).
- rapid_exit (6): the session is over after fewer than `FEW_PROMPTS` of the user's prompts and
  ends in an error: its last tool call failed, or the user's last word stopped the agent.
- interrupt_cascade (5): an interruption within `CASCADE` of the one before.
- user_curse (5): a prompt of the user's swears (English or French).
- request_interrupted (2.5): Claude Code's marker "[Request interrupted by user" in the user's
  turn, or a failed call it says was interrupted (not both for one moment).
- exit_error (1): a command failed (its exit status, or a check's output that says so).
- repeated_question (1): the user asks again: a question of 3+ words whose words overlap an
  earlier question's by Jaccard `SAME_QUESTION` or more.
- long_silence (0.5): a prompt of the user's comes more than `SILENCE` after the session's
  previous event.
- user_negation (0.5): a prompt of the user's opens with a negation ("no", "nope", "wrong",
  "non", "that's not...", "it still fails", "doesn't work"; not "no thanks").
- compaction (0.5): the context was compacted (`compaction.finished`; in a session the hooks
  recorded without it, `compaction.started`).

Only the main agent's prompts are the user's; tool signals count every agent's calls (a
subagent's failing command is the session's friction too). A session's score is the sum of
weight x count; its class is the first of `CLASSES` whose floor the score reaches.
"""

import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Literal

import msgspec

from projections.recall.words import jaccard, word_set
from schemas import kinds
from schemas.events import Event
from schemas.text.harness import clean, harness_kind
from schemas.text.markdown import prose
from workers.evidence.failures import Run, output_of, runs, signature
from workers.evidence.tool_uses import tool_uses

Signal = Literal[
    "user_intervention", "session_abandoned", "false_success", "no_resolution", "tool_loop", "rapid_exit",
    "interrupt_cascade", "user_curse", "request_interrupted", "exit_error", "repeated_question",
    "long_silence", "user_negation", "compaction",
]  # fmt: skip
WEIGHTS: dict[Signal, float] = {
    "user_intervention": 10, "session_abandoned": 10, "false_success": 8, "no_resolution": 8,
    "tool_loop": 6, "rapid_exit": 6, "interrupt_cascade": 5, "user_curse": 5, "request_interrupted": 2.5,
    "exit_error": 1, "repeated_question": 1, "long_silence": 0.5, "user_negation": 0.5, "compaction": 0.5,
}  # fmt: skip
Quality = Literal["BAD", "FRICTION", "ROUGH", "OK"]
# a score's class, the first whose floor it reaches: BAD takes two of the heaviest signals (or
# one with a lot besides), FRICTION one of them or a pile of lighter ones, ROUGH an interruption
# or a few failed commands
CLASSES: tuple[tuple[Quality, float], ...] = (("BAD", 20.0), ("FRICTION", 10.0), ("ROUGH", 3.0), ("OK", 0.0))
IDLE = timedelta(minutes=30)  # a session idle this long is over (it may never send SessionEnd)
CASCADE = timedelta(seconds=60)
SILENCE = timedelta(minutes=10)
SAME_QUESTION = 0.8
LOOP = 3
FEW_PROMPTS = 3
_EVIDENCE = 300  # characters of what a signal quotes

_STASH = re.compile(r"(?:^|<command-name>)\s*/(?:[\w-]+:)?stash\b")
_REFUSED = re.compile(
    r"User rejected tool use|The user doesn't want to proceed|doesn't want to take this action"
)
_INTERRUPTED = re.compile(r"\[Request interrupted by user|Interrupted by user")
_CURSE = re.compile(
    r"\b(?:fuck\w*|shit\w*|damn(?:it)?|goddamn\w*|wtf|ffs|crap|bullshit|putain|merde|bordel)\b", re.IGNORECASE
)
_NEGATION = re.compile(
    r"^(?:(?:no+|nope|nah|non|wrong|incorrect)\b(?!\s*(?:thanks|thank you|worries|problem|need|rush|merci)\b)"
    r"|that'?s (?:not|wrong)\b|(?:it |this |that )?(?:still )?(?:doesn'?t|does not|didn'?t|did not) work\b"
    r"|(?:it |this |that )?still (?:fails|failing|broken|doesn'?t|does not|not)\b"
    r"|not (?:what|right|working)\b)",
    re.IGNORECASE,
)
_SUCCESS = re.compile(
    r"\b(?:done|fixed|complete[d]?|resolved|succeeded|works now|now works|(?:is|are) working"
    r"|all (?:\d+ )?(?:tests|checks) pass(?:ed|ing)?|tests? pass(?:es|ed|ing)?)\b",
    re.IGNORECASE,
)


class Occurrence(msgspec.Struct, frozen=True):
    """One signal met: where (the event that shows it) and what it quotes."""

    signal: Signal
    ts: datetime
    event_id: str
    evidence: str


class Friction(msgspec.Struct, frozen=True):
    """How one session went."""

    session_id: str
    project: str
    started: datetime
    ended: datetime
    prompts: int  # the user's own
    over: bool  # ended, or idle for IDLE
    score: float
    quality: Quality
    counts: dict[str, int]
    occurrences: tuple[Occurrence, ...]


class Turn(msgspec.Struct):
    """A user's turn: its opening prompt (None before the first) and its events, in order."""

    prompt: Event | None
    text: str
    events: list[Event]


def payload(event: Event) -> dict[str, object]:
    decoded = msgspec.json.decode(event.payload)
    return decoded if isinstance(decoded, dict) else {}


def _said(event: Event) -> str:
    text = payload(event).get("prompt")
    return text if isinstance(text, str) else ""


def own_words(text: str) -> str:
    """The user's own words of a prompt, without Claude Code's wrapping and code."""
    return "" if harness_kind(text) is not None else " ".join(prose(clean(text)).words.split())


def _is_user_turn(event: Event) -> bool:
    if event.kind != kinds.PROMPT_SUBMITTED or event.agent != "main":
        return False
    text = _said(event)
    return harness_kind(text) in (None, "interruption") or bool(_STASH.search(text))


def _error_text(event: Event) -> str:
    return output_of(payload(event).get("error")) if event.kind == kinds.TOOL_FAILED else ""


def refused(event: Event) -> bool:
    """Whether a tool call is one the user declined or stopped."""
    return event.kind == kinds.TOOL_FAILED and bool(_REFUSED.search(_error_text(event)[:1000]))


def _interrupted(event: Event) -> bool:
    if event.kind == kinds.PROMPT_SUBMITTED:
        return harness_kind(_said(event)) == "interruption"
    return event.kind == kinds.TOOL_FAILED and (
        payload(event).get("is_interrupt") is True or bool(_INTERRUPTED.match(_error_text(event)))
    )


def turns(events: Sequence[Event]) -> list[Turn]:
    """The session's events cut at each of the user's turns (the first holds what came before)."""
    cut = [Turn(None, "", [])]
    for event in events:
        if _is_user_turn(event):
            cut.append(Turn(event, _said(event), []))
        cut[-1].events.append(event)
    return cut


def analyze(events: Sequence[Event], now: datetime) -> Friction:
    """The friction of one session (its events, any order; one session's only). A session is
    over once ended or idle for IDLE at `now`."""
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    first, last = ordered[0], ordered[-1]
    over = any(e.kind == kinds.SESSION_ENDED for e in ordered) or now - last.ts >= IDLE
    found = sorted(_found(ordered, over), key=lambda o: (o.ts, o.event_id, o.signal))
    counts: dict[str, int] = {}
    for each in found:
        counts[each.signal] = counts.get(each.signal, 0) + 1
    score = sum(WEIGHTS[o.signal] for o in found)
    prompts = sum(1 for t in turns(ordered) if t.prompt is not None and own_words(t.text))
    return Friction(
        session_id=first.session_id or "",
        project=first.project,
        started=first.ts,
        ended=last.ts,
        prompts=prompts,
        over=over,
        score=score,
        quality=quality(score),
        counts=dict(sorted(counts.items())),
        occurrences=tuple(found),
    )


def quality(score: float) -> Quality:
    return next(name for name, floor in CLASSES if score >= floor)


def _found(ordered: list[Event], over: bool) -> Iterator[Occurrence]:
    cut = turns(ordered)
    shell = list(runs(ordered))
    yield from _user_signals(ordered, cut)
    yield from _interruptions(ordered)
    yield from _commands(shell, {e.id: e.ts for e in ordered})
    yield from _false_successes(ordered, cut, shell)
    yield from _loops(cut)
    yield from (
        Occurrence("compaction", e.ts, e.id, str(payload(e).get("trigger") or ""))
        for e in _compactions(ordered)
    )
    if over:
        yield from _endings(ordered, cut)


def _occurrence(signal: Signal, event: Event, evidence: str) -> Occurrence:
    return Occurrence(signal, event.ts, event.id, " ".join(evidence.split())[:_EVIDENCE])


def _user_signals(ordered: list[Event], cut: list[Turn]) -> Iterator[Occurrence]:
    """What the user's prompts say (intervention, curse, negation, a question asked again) and
    when they come (a long silence); a refusal is an intervention, once per turn."""
    questions: list[frozenset[str]] = []
    before = {e.id: ordered[i - 1] for i, e in enumerate(ordered) if i}
    for turn in cut:
        if (refusal := next((e for e in turn.events if refused(e)), None)) is not None:
            yield _occurrence("user_intervention", refusal, _error_text(refusal))
        if (prompt := turn.prompt) is None:
            continue
        if _STASH.search(turn.text):
            yield _occurrence("user_intervention", prompt, clean(turn.text) or turn.text)
        if (previous := before.get(prompt.id)) is not None and prompt.ts - previous.ts > SILENCE:
            yield _occurrence(
                "long_silence", prompt, f"{(prompt.ts - previous.ts) // timedelta(minutes=1)} min"
            )
        words = own_words(turn.text)
        if not words:
            continue
        if _CURSE.search(words):
            yield _occurrence("user_curse", prompt, words)
        if _NEGATION.match(words):
            yield _occurrence("user_negation", prompt, words)
        if "?" in words and len(asked := word_set(words)) >= 3:
            if any(jaccard(asked, earlier) >= SAME_QUESTION for earlier in questions):
                yield _occurrence("repeated_question", prompt, words)
            questions.append(asked)


def _interruptions(ordered: list[Event]) -> Iterator[Occurrence]:
    """Each interruption, and each within CASCADE of the one before. A call stopped by the
    interruption that Claude Code then marks in the user's turn is one interruption."""
    marked = {e.ts for e in ordered if e.kind == kinds.PROMPT_SUBMITTED and _interrupted(e)}
    last: datetime | None = None
    for event in ordered:
        if not _interrupted(event) or (event.kind == kinds.TOOL_FAILED and event.ts in marked):
            continue
        yield _occurrence("request_interrupted", event, _said(event) or _error_text(event))
        if last is not None and event.ts - last <= CASCADE:
            yield _occurrence(
                "interrupt_cascade", event, f"{(event.ts - last).total_seconds():.0f} s after the last"
            )
        last = event.ts


def _commands(shell: list[Run], times: dict[str, datetime]) -> Iterator[Occurrence]:
    """Each failed command, and whether the last of them ever passed again."""
    failed = [(n, run) for n, run in enumerate(shell) if run.failed]
    for _, run in failed:
        evidence = f"{run.key}: {signature(run.output)}"[:_EVIDENCE]
        yield Occurrence("exit_error", times[run.event_id], run.event_id, evidence)
    if failed:
        n, last = failed[-1]
        if not any(r.key == last.key and not r.failed for r in shell[n + 1 :]):
            evidence = f"{last.key}: {signature(last.output)}"[:_EVIDENCE]
            yield Occurrence("no_resolution", times[last.event_id], last.event_id, evidence)


def _false_successes(ordered: list[Event], cut: list[Turn], shell: list[Run]) -> Iterator[Occurrence]:
    """Each turn the agent ends claiming success that the next command, or the user's next
    prompt, contradicts."""
    at = {e.id: i for i, e in enumerate(ordered)}
    prompts = [t.prompt for t in cut if t.prompt is not None]
    for event in ordered:
        if event.kind != kinds.ASSISTANT_STOPPED or event.agent != "main":
            continue
        said = payload(event).get("last_assistant_message")
        if not isinstance(said, str) or not (claim := _SUCCESS.search(prose(said).words)):
            continue
        after = at[event.id]
        next_run = next((r for r in shell if at[r.event_id] > after), None)
        next_prompt = next((p for p in prompts if at[p.id] > after), None)
        words = own_words(_said(next_prompt)) if next_prompt is not None else ""
        if next_run is not None and next_run.failed:
            yield _occurrence(
                "false_success",
                event,
                f"said {claim.group()!r}; then {next_run.key} failed: {signature(next_run.output)}",
            )
        elif words and (_NEGATION.match(words) or _CURSE.search(words)):
            yield _occurrence("false_success", event, f"said {claim.group()!r}; the user answered: {words}")


def _loops(cut: list[Turn]) -> Iterator[Occurrence]:
    """Each call one agent repeats LOOP times or more in a turn with the same outcome."""
    for turn in cut:
        seen: dict[bytes, int] = {}
        for use in tool_uses(turn.events):
            outcome = use.payload.get("error") if use.failed else use.payload.get("tool_response")
            same = msgspec.json.encode([use.event.agent, use.name, use.given, use.failed, outcome])
            seen[same] = seen.get(same, 0) + 1
            if seen[same] == LOOP:
                yield _occurrence(
                    "tool_loop", use.event, f"{use.name} {msgspec.json.encode(use.given).decode()}"
                )


def _compactions(ordered: list[Event]) -> list[Event]:
    finished = [e for e in ordered if e.kind == kinds.COMPACTION_FINISHED]
    return finished or [e for e in ordered if e.kind == kinds.COMPACTION_STARTED]


def _endings(ordered: list[Event], cut: list[Turn]) -> Iterator[Occurrence]:
    """How a session that is over ended: abandoned, and after how few prompts."""
    users = [e for e in ordered if _is_user_turn(e) or refused(e)]
    last_word = users[-1] if users else None
    stopped = last_word is not None and (refused(last_word) or _interrupted(last_word))
    cursed = last_word is not None and bool(_CURSE.search(own_words(_said(last_word))))
    if last_word is not None and (stopped or cursed):
        yield _occurrence("session_abandoned", last_word, _said(last_word) or _error_text(last_word))
    tools = [e for e in ordered if e.kind in (kinds.TOOL_USED, kinds.TOOL_FAILED)]
    erred = stopped or (bool(tools) and tools[-1].kind == kinds.TOOL_FAILED)
    prompts = sum(1 for t in cut if t.prompt is not None and own_words(t.text))
    if erred and prompts < FEW_PROMPTS:
        yield _occurrence("rapid_exit", ordered[-1], f"over after {prompts} prompt(s), in an error")
