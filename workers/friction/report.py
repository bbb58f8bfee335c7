"""The shapes of `reverie friction`'s files (.claude/friction/), and the aggregates they hold:
classes, daily trends, best and worst sessions, antigen groups for review. Pure.

- friction_analysis.json: `Analysis`, every session (its score, class, signal counts);
- friction_summary.json: `Summary`, the weights and floors used, the classes, each day's
  trend (by the day a session started, UTC), the best and worst sessions;
- friction_raw.jsonl: one `Raw` a line, each signal met (session, ts, signal, evidence);
- antigen_candidates.json: `Antigens`, the BAD sessions' candidates and their groups;
- antigen_review.md: the groups, worst first, for a person to read (`review`).
"""

from collections.abc import Sequence
from datetime import datetime

import msgspec

from workers.friction.lessons import Antigen, Behaviour, group_key
from workers.friction.signals import CLASSES, WEIGHTS, Friction, Quality

BEST_WORST = 5


class SessionReport(msgspec.Struct, frozen=True):
    session_id: str
    project: str
    source: str  # "transcript": read from a file; "log": the hooks' (or an import's) events
    started: datetime
    ended: datetime
    prompts: int
    over: bool
    score: float
    quality: Quality
    counts: dict[str, int]


class Analysis(msgspec.Struct, frozen=True):
    generated: datetime
    sessions: list[SessionReport]


class Day(msgspec.Struct, frozen=True):
    day: str
    sessions: int
    mean_score: float
    bad_rate: float
    classes: dict[str, int]


class Ranked(msgspec.Struct, frozen=True):
    session_id: str
    score: float
    quality: Quality
    started: datetime


class Summary(msgspec.Struct, frozen=True):
    generated: datetime
    sessions: int
    weights: dict[str, float]
    floors: dict[str, float]
    classes: dict[str, int]
    bad_rate: float
    signals: dict[str, int]  # occurrences of each, every session
    daily: list[Day]
    worst: list[Ranked]
    best: list[Ranked]
    behavioural_preferences: list[Behaviour]


class Raw(msgspec.Struct, frozen=True):
    session_id: str
    ts: datetime
    signal: str
    weight: float
    event_id: str
    evidence: str


class Group(msgspec.Struct, frozen=True):
    signal: str
    tools: str
    command: str
    error: str
    candidates: int
    sessions: int
    score: float  # the signal's weight x its candidates
    rule: str
    user_said: list[str]


class Antigens(msgspec.Struct, frozen=True):
    generated: datetime
    bad_sessions: int
    candidates: list[Antigen]
    groups: list[Group]


def report(friction: Friction, source: str) -> SessionReport:
    f = friction
    return SessionReport(
        f.session_id, f.project, source, f.started, f.ended, f.prompts, f.over, f.score, f.quality, f.counts
    )


def _classes(reports: Sequence[SessionReport]) -> dict[str, int]:
    return {name: sum(1 for r in reports if r.quality == name) for name, _ in CLASSES}


def _rate(classes: dict[str, int], total: int) -> float:
    return round(classes["BAD"] / total, 4) if total else 0.0


def _ranked(r: SessionReport) -> Ranked:
    return Ranked(r.session_id, r.score, r.quality, r.started)


def summary(
    reports: Sequence[SessionReport], raw: Sequence[Raw], behaviours: list[Behaviour], now: datetime
) -> Summary:
    days: dict[str, list[SessionReport]] = {}
    for r in reports:
        days.setdefault(r.started.date().isoformat(), []).append(r)
    daily = []
    for day, held in sorted(days.items()):
        classes = _classes(held)
        mean = round(sum(r.score for r in held) / len(held), 3)
        daily.append(Day(day, len(held), mean, _rate(classes, len(held)), classes))
    ordered = sorted(reports, key=lambda r: (-r.score, r.started, r.session_id))
    signals: dict[str, int] = {signal: 0 for signal in WEIGHTS}
    for each in raw:
        signals[each.signal] += 1
    classes = _classes(reports)
    return Summary(
        generated=now,
        sessions=len(reports),
        weights={signal: weight for signal, weight in WEIGHTS.items()},
        floors={name: floor for name, floor in CLASSES},
        classes=classes,
        bad_rate=_rate(classes, len(reports)),
        signals=signals,
        daily=daily,
        worst=[_ranked(r) for r in ordered[:BEST_WORST]],
        best=[_ranked(r) for r in reversed(ordered[-BEST_WORST:])],
        behavioural_preferences=behaviours,
    )


def raw(friction: Friction) -> list[Raw]:
    return [
        Raw(friction.session_id, o.ts, o.signal, WEIGHTS[o.signal], o.event_id, o.evidence)
        for o in friction.occurrences
    ]


def groups(candidates: Sequence[Antigen]) -> list[Group]:
    """The candidates grouped by pattern, the heaviest first."""
    by: dict[tuple[str, str, str, str], list[Antigen]] = {}
    for antigen in candidates:
        by.setdefault(group_key(antigen), []).append(antigen)
    found = [
        Group(
            signal=signal,
            tools=tools,
            command=command,
            error=error,
            candidates=len(held),
            sessions=len({a.session_id for a in held}),
            score=WEIGHTS[held[0].signal] * len(held),  # type: ignore[index]
            rule=held[0].rule,
            user_said=list(dict.fromkeys(w for a in held for w in a.user_said))[:3],
        )
        for (signal, tools, command, error), held in by.items()
    ]
    return sorted(found, key=lambda g: (-g.score, g.signal, g.tools, g.command, g.error))


def review(antigens: Antigens) -> str:
    """antigen_review.md: the groups, worst first, each with what the user said and the rule."""
    lines = [
        "# Friction antigen candidates",
        "",
        f"Generated: {antigens.generated.isoformat()}  ",
        f"BAD sessions: {antigens.bad_sessions} | candidates: {len(antigens.candidates)} | "
        f"patterns: {len(antigens.groups)}",
        "",
    ]
    if antigens.groups:
        lines += [
            "| # | signal | tools | command | count | sessions | score |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {n} | {g.signal} | {g.tools or '-'} | {g.command or '-'} | {g.candidates} | {g.sessions} "
            f"| {g.score:g} |"
            for n, g in enumerate(antigens.groups, 1)
        ]
    else:
        lines.append("No BAD session: nothing to review.")
    for n, g in enumerate(antigens.groups, 1):
        lines += ["", f"## {n}. {g.signal}: {g.tools or '-'}", "", f"**Candidate rule:** {g.rule}", ""]
        if g.error:
            lines += [f"**Error:** `{g.command}`: {g.error}", ""]
        lines += [f"> {said}" for said in g.user_said] or ["(the user said nothing in these turns)"]
    return "\n".join(lines) + "\n"
