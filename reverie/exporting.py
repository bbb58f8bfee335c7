"""Carrying a project's memory to another machine or a teammate: `reverie export json` and
`reverie import-json`.

A project's memory is every event of the log recorded in it (its `project`): what its sessions
did (observed), what the workers learned from it (derived) and what its user decided by hand,
memories scoped `global` made in its sessions included. Events other projects recorded about it
are not (a `reverie forget` run from another project's folder is that project's event).

The file is JSON Lines: a header (`Header`: the format, its version, the event schema's version,
the project, how many events) and then one event a line, exactly as the log keeps it (id, kind,
ts, recorded_at, project, session, agent, source, v, payload, caused_by), in id order.

An import is data from outside, never trusted as this machine's own (schemas/registry.py says
what each kind is to an import):
- what was observed there (prompts, tool uses, sessions, stashes, recalls, Claude Code's memory
  files) lands, under its own id, with the source `import-json`: an event the log holds already
  is skipped, so a second import doubles nothing;
- what the other machine's workers derived (facts, entities, episodes, preferences...) is never
  imported: this stack's workers derive it again from the data (deterministic ids: the same
  causes give the same events), and the sessions it brought are thought over as they end;
- the user's decisions (remember, forget, pin, promote, approve, correct, and any memory for
  every project) land only when the importing user says so (`--with-decisions`); `--dry-run`
  lists them first. Imported, they still wait for approval before CLAUDE.md's memory section;
- which folder is which project on the other machine (`project.identified`) is its own.
An event of another project than the header's, or naming a cause neither the log nor the file
holds, or a line that is not a valid event (bad JSON, nested too deep, an unknown kind), becomes a
dead letter with its reason; the lines around it land.

Costs: export reads every segment of the log once (its project's rows kept in memory, sorted by
id); import reads the log's ids once, then the file line by line.
"""

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO

import msgspec
import redis

from ingest.dead_letters import write_dead_letter
from ingest.emit import Emitter, Rejected
from projections.event_log import EventLog, to_events
from reverie.console import err, fail, out, progress_bar, warn_quarantined
from schemas.events import Event, InvalidEvent, decode_event, payload_of
from schemas.kinds import SCHEMA_VERSION, SOURCE_IMPORT_JSON
from schemas.observed import (
    ClaudeMemoryRead,
    FactCorrected,
    MemoryApproved,
    MemoryForgotten,
    MemoryRemembered,
    ObservationPromoted,
    PreferencePinned,
)
from schemas.registry import KINDS
from schemas.settings import Settings

FORMAT = "reverie-events"
FORMAT_VERSION = 1
DEAD_LETTER_STAGE = "import"  # as the transcripts' import: the reason names the file and line


class Header(msgspec.Struct, frozen=True, kw_only=True):
    """The first line of an export: what it is, and what wrote it."""

    format: str = FORMAT
    version: int = FORMAT_VERSION
    schema_version: int = SCHEMA_VERSION  # the events' (schemas/kinds.py)
    project: str
    events: int
    exported_at: datetime


class NotAnExport(ValueError):
    """A file `import-json` cannot read; the message says why and what to do."""


def read_header(line: bytes, path: str) -> Header:
    """The header of the export at `path`, from its first line; NotAnExport if it is none this
    reverie reads."""
    try:
        said = msgspec.json.decode(line)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        said = None
    if not isinstance(said, dict) or said.get("format") != FORMAT:
        raise NotAnExport(
            f"{path} is not a reverie export: its first line does not name the {FORMAT!r} format "
            "(`reverie export json` writes one)"
        )
    for field, ours in (("version", FORMAT_VERSION), ("schema_version", SCHEMA_VERSION)):
        theirs = said.get(field)
        if isinstance(theirs, int) and theirs > ours:
            raise NotAnExport(
                f"{path} was written by a newer reverie ({field.replace('_', ' ')} {theirs}; this one "
                f"reads up to {ours}): upgrade reverie to import it"
            )
    try:
        return msgspec.convert(said, Header)
    except msgspec.ValidationError as e:
        raise NotAnExport(f"{path}: its header is damaged: {e}") from None


def project_events(settings: Settings, project: str) -> list[Event]:
    """Every event of `project` in the log, in id order, with a progress bar over the segments."""
    import pyarrow as pa
    import pyarrow.compute as pc

    event_log = EventLog(settings.event_log_dir, warn_quarantined)
    segments = event_log.segments()
    tables = []
    with progress_bar() as progress:
        task = progress.add_task("reading the event log", total=len(segments))
        for path in segments:
            if (table := event_log.read(path)) is not None:
                tables.append(table.filter(pc.equal(table.column("project"), project)))
            progress.advance(task)
    if not tables:
        return []
    return to_events(pa.concat_tables(tables).sort_by("id"))


def export_json(project: str, output: str | None) -> int:
    """Write `project`'s events to `output` (stdout if None); the exit status."""
    settings = Settings.from_env()
    events = project_events(settings, project)
    if not events:
        return fail(
            f"the event log holds no event of project {project!r}; the projects it holds: "
            'reverie sql "select project, count(*) from events group by 1"'
        )
    header = Header(project=project, events=len(events), exported_at=datetime.now(UTC))
    if output is None:
        _write(sys.stdout.buffer, header, events)
        sys.stdout.buffer.flush()
    else:
        try:
            _write_whole(os.path.expanduser(output), header, events)
        except OSError as e:
            return fail(f"cannot write {output}: {e.strerror or e}")
    sessions = len({e.session_id for e in events if e.session_id})
    first, last = min(e.ts for e in events), max(e.ts for e in events)
    err.print(
        f"exported {len(events)} events of {project} ({sessions} sessions, "
        f"{first:%Y-%m-%d} to {last:%Y-%m-%d}) to {output or 'stdout'}",
        highlight=False,
    )
    return 0


def _write_whole(output: str, header: Header, events: list[Event]) -> None:
    """Write the export at `output` whole or not at all (a temp file beside it, renamed)."""
    folder = os.path.dirname(os.path.abspath(output))
    fd, temp = tempfile.mkstemp(prefix=".export-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            _write(f, header, events)
        os.replace(temp, output)
    except BaseException:
        os.unlink(temp)
        raise


def _write(out: IO[bytes], header: Header, events: list[Event]) -> None:
    encoder = msgspec.json.Encoder()
    out.write(encoder.encode(header) + b"\n")
    with progress_bar() as progress:
        task = progress.add_task("writing events", total=len(events))
        for event in events:
            out.write(encoder.encode(event) + b"\n")
            progress.advance(task)


class Decision(msgspec.Struct, frozen=True):
    """A user's choice an export carries (schemas/registry.py `imported`), as `--dry-run` lists it."""

    line: int
    event_id: str
    said: str  # what it decides, in words


class Imported(msgspec.Struct, kw_only=True):
    """What an import did (or, dry, would do) with the lines of a file."""

    new: int = 0
    known: int = 0  # in the log already, or earlier in the file
    bad: int = 0  # kept as dead letters
    derived: int = 0  # what the other machine's workers derived: this stack's derive it again
    local: int = 0  # about the other machine's own disk (which folder is which project)
    decisions: list[Decision] = []  # the user's choices in the file: imported only when asked
    held_back: int = 0  # of them, not imported (not asked)
    sessions: set[str] = set()  # the sessions it brought events of


def import_json(path: str, wait: bool = True, with_decisions: bool = False, dry_run: bool = False) -> int:
    """Append the events of the export at `path` to the running stack (`dry_run`: say what would
    be imported, decisions first, and send nothing); the exit status."""
    from reverie.importing import think_over, wait_until_archived
    from workers.redis_client import connect

    settings = Settings.from_env()
    try:
        f = open(os.path.expanduser(path), "rb")  # noqa: SIM115 (closed below, once read)
    except OSError as e:
        return fail(f"cannot read {path}: {e.strerror or e}")
    with f:
        try:
            header = read_header(f.readline(), path)
        except NotAnExport as e:
            return fail(str(e))
        if dry_run:
            done = _append(settings, None, path, header, _lines(f), with_decisions)
            _show_dry(path, header, done, with_decisions)
            return 0
        client = connect(settings, timeout=2.0)
        try:
            client.ping()
            done = _append(settings, client, path, header, _lines(f), with_decisions)
        except (redis.RedisError, OSError) as e:
            return fail(
                f"cannot reach Redis at {settings.redis_shown} ({e}): start reverie with "
                "`reverie up --detach`; importing again sends only what did not arrive"
            )
    err.print(_said(path, header, done), highlight=False, markup=False)
    if done.held_back:
        err.print(_held_back(path, done), highlight=False, markup=False)
    if wait and done.new and not wait_until_archived(settings, done.new):
        return fail("the dispatcher has not archived everything yet; see `reverie status`")
    think_over(client, done.sessions)
    return 0


def _said(path: str, header: Header, done: Imported) -> str:
    return (
        f"{path}: {done.new + done.known + done.bad + done.derived + done.local + done.held_back} "
        f"events of {header.project}: {done.new} new, {done.known} already in the log"
        + (f", {done.derived} derived there (derived again here)" if done.derived else "")
        + (f", {done.local} about the other machine's folders (left out)" if done.local else "")
        + (
            f", {done.bad} malformed lines kept as dead letters (`reverie status` counts them)"
            if done.bad
            else ""
        )
    )


def _held_back(path: str, done: Imported) -> str:
    return (
        f"{done.held_back} decisions of the file's user (remember, forget, pin, promote, approve, "
        f"correct, or memory for every project) were not imported: `reverie import-json {path} "
        "--dry-run` lists them, `--with-decisions` imports them"
    )


def _show_dry(path: str, header: Header, done: Imported, with_decisions: bool) -> None:
    """What an import of `path` would do: the decisions first, each on its line, then the counts."""
    if done.decisions:
        verb = "would be imported" if with_decisions else "would be left out without --with-decisions"
        out.print(f"{len(done.decisions)} decisions of the file's user ({verb}):", highlight=False)
        for decision in done.decisions:
            out.print(f"  line {decision.line}: {decision.said}", highlight=False, markup=False)
    else:
        out.print("no decisions of the file's user (remember, forget, pin, promote, approve, correct)")
    out.print(f"dry run, nothing sent: {_said(path, header, done)}", highlight=False, markup=False)


def _lines(f: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The lines after the header, numbered as an editor numbers them; blank ones left out."""
    for number, line in enumerate(f, start=2):
        if line.strip():
            yield number, line


def _append(
    settings: Settings,
    client: "redis.Redis | None",
    path: str,
    header: Header,
    lines: Iterator[tuple[int, bytes]],
    with_decisions: bool = False,
) -> Imported:
    """Send the events of `lines` the log does not hold yet, as data from elsewhere (source
    SOURCE_IMPORT_JSON): what was observed there; the user's decisions only `with_decisions`;
    nothing derived, nor what is about the other machine's disk. What was done with each; with
    no `client`, what would be (nothing is sent, no dead letter written)."""
    known = EventLog(settings.event_log_dir, warn_quarantined).archived_ids()
    done = Imported(decisions=[], sessions=set())
    sink = Emitter(client, SOURCE_IMPORT_JSON) if client is not None else None
    with progress_bar() as progress, sink or contextlib.nullcontext():
        task = progress.add_task("importing events" if sink else "reading events", total=header.events)
        for number, line in lines:
            progress.advance(task)
            try:
                event = _taken(decode_event(line), header, known, done, number, with_decisions)
            except (InvalidEvent, Rejected) as e:
                done.bad += 1
                if sink is not None:
                    reason = f"{path}:{number}: {e}"
                    write_dead_letter(settings.dead_letter_dir, DEAD_LETTER_STAGE, reason, line)
                continue
            if event is None:
                continue
            if sink is not None:
                sink.keep(msgspec.structs.replace(event, source=SOURCE_IMPORT_JSON))
            known.add(event.id)
            done.new += 1
            if event.session_id:
                done.sessions.add(event.session_id)
    return done


def _taken(
    event: Event, header: Header, known: set[str], done: Imported, number: int, with_decisions: bool
) -> Event | None:
    """`event` if it is to be imported, else None (counted in `done`); Rejected if it may not be."""
    if event.project != header.project:  # a file exports one project: nothing lands in another
        raise Rejected(f"an event of {event.project!r} in an export of {header.project!r}")
    treated = KINDS[event.kind].imported
    if treated == "never":
        if KINDS[event.kind].derived:
            done.derived += 1
        else:
            done.local += 1
        return None
    if event.id in known:
        done.known += 1
        return None
    if missing := [cause for cause in event.caused_by if cause not in known]:
        raise Rejected(f"{event.kind} names causes neither the log nor the file holds: {', '.join(missing)}")
    said = payload_of(event)
    if treated == "decision" or getattr(said, "scope", "project") == "global":  # global: the user's choice
        done.decisions.append(Decision(number, event.id, decided(event, said)))
        if not with_decisions:
            done.held_back += 1
            return None
    return event


def decided(event: Event, said: msgspec.Struct) -> str:
    """What a decision event decides (`said`: its payload), in words."""
    match said:
        case MemoryRemembered(text=text, scope=scope, agent=agent):
            whose = f" for {agent} subagents" if agent else ""
            return f"remember{whose}{' for every project' if scope == 'global' else ''}: {text!r}"
        case MemoryForgotten(memory_id=memory_id, reason=reason):
            return f"forget {memory_id} ({reason!r})"
        case PreferencePinned(preference_id=preference_id, pinned=pinned):
            return f"{'pin' if pinned else 'unpin'} preference {preference_id}"
        case ObservationPromoted(observation_id=observation_id, promoted=promoted):
            return f"{'promote' if promoted else 'withdraw'} observation {observation_id} for CLAUDE.md"
        case MemoryApproved(memory_id=memory_id, approved=approved):
            return f"{'approve' if approved else 'refuse'} {memory_id} for CLAUDE.md"
        case FactCorrected(fact_id=fact_id, text=text):
            return f"correct fact {fact_id}: {text!r}"
        case ClaudeMemoryRead(path=path, text=text):
            return f"Claude Code's memory for every project, from {path}: {text[:200]!r}"
    return f"{event.kind} {msgspec.json.encode(said).decode()[:200]}"
