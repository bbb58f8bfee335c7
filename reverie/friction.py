"""`reverie friction`: seed 004's friction analysis over a project's sessions, written to
.claude/friction/ (workers/friction/report.py names the five files), a short table on the
terminal, and the behavioural preferences it finds recorded as memory.

Where the sessions come from, one code path for both: the transcripts under PATH (default: the
project's folder under ~/.claude/projects) read as `reverie import` reads them, and, unless a
PATH is given, the sessions of the project the event log holds (the hooks' and the imports').
A session both hold is read once, from the log. Reading the log needs no running stack.

The preferences are `preference.crystallized` events of Worker("friction", 1), caused by the
calls the user stopped; a session read from a transcript also sends those calls' events, with
the ids `reverie import` gives them (the dispatcher keeps one of each). If Redis cannot take
them they wait in the spool until the stack runs, and the command says so. Costs: one pass
over each transcript, memory for the events of the sessions read (no payload is kept cut).
"""

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from ingest.emit import Emitter, Worker
from ingest.project import identify, project_key
from ingest.redact import redact
from ingest.transcripts import ImportedEvent, Places, find_transcripts, read_transcript
from reverie.console import fail, out, print_rows, progress_bar
from reverie.project_files import write_all
from schemas import kinds
from schemas.events import Event
from schemas.settings import Settings
from workers.friction import lessons, report, signals
from workers.friction.lessons import Behaviour

FRICTION = Worker("friction", 1)
# what the signals read of a session the log holds
_READ = (
    kinds.SESSION_STARTED, kinds.SESSION_ENDED, kinds.PROMPT_SUBMITTED, kinds.TOOL_USED, kinds.TOOL_FAILED,
    kinds.ASSISTANT_STOPPED, kinds.SUBAGENT_STARTED, kinds.SUBAGENT_STOPPED, kinds.COMPACTION_STARTED,
    kinds.COMPACTION_FINISHED,
)  # fmt: skip


_LOG_SESSIONS = """
SELECT id, kind, ts, recorded_at, project, session_id, agent, source, payload::VARCHAR
FROM events WHERE kind IN $kinds AND session_id IN (
    SELECT session_id FROM events WHERE project = $project
    UNION SELECT session_id FROM sessions WHERE project = $project)
ORDER BY id"""


class Session(msgspec.Struct):
    source: str  # "transcript" or "log"
    events: list[Event]
    imported: dict[str, ImportedEvent]  # a transcript's events, by id, as `reverie import` sends them


def as_event(item: ImportedEvent) -> Event:
    """A transcript's event as the log holds it."""
    ts = datetime.fromisoformat(item.ts.replace("Z", "+00:00"))
    agent = item.payload.get("agent_id")
    return Event(
        id=item.id,
        kind=item.kind,
        ts=ts,
        recorded_at=ts,
        project=item.project,
        session_id=item.session_id,
        agent=agent if isinstance(agent, str) and agent else "main",
        source=kinds.SOURCE_IMPORT,
        payload=msgspec.Raw(msgspec.json.encode(item.payload)),
    )


def read_transcripts(files: Sequence[str], sessions: dict[str, Session]) -> int:
    """Add the sessions of `files` that `sessions` does not hold yet; how many lines could not be read."""
    bad = 0
    places: Places = {}
    held = set(sessions)
    with progress_bar() as progress:
        task = progress.add_task("reading transcripts", total=sum(os.path.getsize(f) for f in files))
        for path in files:
            for item in read_transcript(path, places):
                if not isinstance(item, ImportedEvent):
                    bad += 1
                elif item.session_id and item.session_id not in held:
                    session = sessions.setdefault(item.session_id, Session("transcript", [], {}))
                    session.events.append(as_event(item))
                    session.imported[item.id] = item
            progress.advance(task, os.path.getsize(path))
    return bad


def read_log(settings: Settings, project: str) -> dict[str, Session]:
    """The sessions of `project` the event log holds (none if it holds nothing yet)."""
    from projections.sql import connect

    db = connect(settings)
    try:
        rows = db.execute(_LOG_SESSIONS, {"project": project, "kinds": list(_READ)}).fetchall()
    finally:
        db.close()
    sessions: dict[str, Session] = {}
    for event_id, kind, ts, recorded, project_, session_id, agent, source, payload in rows:
        event = Event(
            id=event_id, kind=kind, ts=ts, recorded_at=recorded, project=project_, session_id=session_id,
            agent=agent or "main", source=source, payload=msgspec.Raw(payload.encode()),
        )  # fmt: skip
        sessions.setdefault(session_id, Session("log", [], {})).events.append(event)
    return sessions


def run(path: str | None, project_folder: str | None, out_dir: str | None, record: bool = True) -> int:
    settings = Settings.from_env()
    folder = os.path.abspath(os.path.expanduser(project_folder or os.getcwd()))
    if not os.path.isdir(folder):
        return fail(f"--project: no such folder: {project_folder}")
    project, root = identify(folder)
    if path is not None and not os.path.exists(os.path.expanduser(path)):
        return fail(
            f"no such file or folder: {path}. Claude Code keeps its transcripts in ~/.claude/projects."
        )
    source = os.path.expanduser(path or os.path.join("~", ".claude", "projects", project_key(root)))
    files = find_transcripts(source) if os.path.exists(source) else []
    sessions = {} if path is not None else read_log(settings, project)
    bad = read_transcripts(files, sessions)
    if not sessions:
        return fail(f"no sessions: no transcripts under {source}, and the event log holds none of {project}")
    now = datetime.now(UTC)
    frictions = {sid: signals.analyze(s.events, now) for sid, s in sorted(sessions.items())}
    behaviours = lessons.behaviours(s.events for s in sessions.values())
    try:
        reports = out_dir or os.path.join(root, ".claude", "friction")
        written = write(reports, sessions, frictions, behaviours, now, within=out_dir or root)
    except OSError as e:
        return fail(f"nothing written: {e}")
    recorded = _record(settings, sessions, behaviours) if record and behaviours else ""
    _show(frictions, behaviours, written, len(files), bad, recorded)
    return 0


def write(
    folder: str,
    sessions: dict[str, Session],
    frictions: dict[str, signals.Friction],
    behaviours: list[Behaviour],
    now: datetime,
    within: str | None = None,
) -> str:
    """The five files, in `folder` (made if missing), each checked to land inside `within` (the
    project; `folder` itself by default) before the first is written (Refused if one does not:
    a `.claude/friction` that links elsewhere); the folder."""
    reports = [report.report(f, sessions[sid].source) for sid, f in frictions.items()]
    raw = [line for f in frictions.values() for line in report.raw(f)]
    candidates = [a for sid, f in frictions.items() for a in lessons.antigens(f, sessions[sid].events)]
    antigens = report.Antigens(
        now, sum(1 for f in frictions.values() if f.quality == "BAD"), candidates, report.groups(candidates)
    )
    antigens = msgspec.convert(_redacted(antigens), report.Antigens)
    files = {
        "friction_analysis.json": msgspec.json.format(
            msgspec.json.encode(_redacted(report.Analysis(now, reports)))
        ),
        "friction_summary.json": msgspec.json.format(
            msgspec.json.encode(_redacted(report.summary(reports, raw, behaviours, now)))
        ),
        "friction_raw.jsonl": b"".join(msgspec.json.encode(_redacted(line)) + b"\n" for line in raw),
        "antigen_candidates.json": msgspec.json.format(msgspec.json.encode(antigens)),
        "antigen_review.md": report.review(antigens).encode(),
    }
    write_all({os.path.join(folder, name): data.decode() for name, data in files.items()}, within or folder)
    return folder


def _redacted(value: msgspec.Struct) -> Any:
    """A report's fields with the secrets of its quotes (prompts, errors) taken out, as the hook takes
    them out of a payload: string by string, before encoding (in the encoded text, an escaped quote
    of a prompt, `-p\\"...\\"`, would open a value running into the next string)."""
    return redact(msgspec.to_builtins(value, builtin_types=(datetime,)))


def _record(settings: Settings, sessions: dict[str, Session], behaviours: list[Behaviour]) -> str:
    """Emit the behavioural preferences (and the transcripts' events they come from); what became of them."""
    from workers.redis_client import connect

    client = connect(settings, timeout=2.0)
    causes = {cause for b in behaviours for cause in b.caused_by}
    with Emitter(client, kinds.SOURCE_IMPORT, spool=settings) as observed:
        for session in sessions.values():
            for cause in sorted(causes & session.imported.keys()):
                item = session.imported[cause]
                observed.emit(item.kind, item.payload, project=item.project, ts=item.ts, event_id=item.id)
    with Emitter(client, kinds.SOURCE_WORKER, FRICTION, spool=settings) as derived:
        for each in lessons.crystallized(behaviours):
            derived.emit(each.kind, each.payload, **each.placed())
    if "spool" in (observed.went_to, derived.went_to):
        return "kept in the spool: the stack records them once it runs (`reverie up --detach`)"
    return "recorded"


def _show(
    frictions: dict[str, signals.Friction],
    behaviours: list[Behaviour],
    folder: str,
    files: int,
    bad: int,
    recorded: str,
) -> None:
    counted = {name: 0 for name, _ in signals.CLASSES}
    for f in frictions.values():
        counted[f.quality] += 1
    out.print(
        f"{len(frictions)} sessions ({files} transcripts"
        + (f", {bad} unreadable lines" if bad else "")
        + "): "
        + ", ".join(f"{n} {name}" for name, n in counted.items())
    )
    worst = sorted(frictions.values(), key=lambda f: (-f.score, f.started))[: report.BEST_WORST]
    rows = [
        (f.session_id, f.started.strftime("%Y-%m-%d %H:%M"), f.quality, f"{f.score:g}", _top(f.counts))
        for f in worst
        if f.score > 0
    ]
    if rows:
        print_rows(["worst session", "started", "class", "score", "signals"], rows)
    for b in behaviours:
        out.print(f"behavioural preference ({b.confidence}, {b.observations} observations): {b.statement}")
    if behaviours:
        out.print(f"preferences {recorded or 'not recorded (--no-record)'}")
    out.print(
        f"files in {folder}: friction_analysis.json, friction_summary.json, friction_raw.jsonl, "
        "antigen_candidates.json, antigen_review.md",
        highlight=False,
    )


def _top(counts: dict[str, int]) -> str:
    heaviest = sorted(counts.items(), key=lambda c: -signals.WEIGHTS[c[0]] * c[1])[:3]  # type: ignore[index]
    return ", ".join(f"{name} x{n}" for name, n in heaviest)
