"""Carrying a project's memory to another machine or a teammate: `reverie export json` and
`reverie import-json`.

A project's memory is every event of the log recorded in it (its `project`): what its sessions
did (observed) and what the workers learned from it (derived), memories scoped `global` made in
its sessions included (they are recorded in the project they were made in, and hold everywhere
once imported). Events other projects recorded about it are not (a `reverie forget` run from
another project's folder is that project's event).

The file is JSON Lines: a header (`Header`: the format, its version, the event schema's version,
the project, how many events) and then one event a line, exactly as the log keeps it (id, kind,
ts, recorded_at, project, session, agent, source, v, payload, caused_by), in id order. Import
appends each through the one Emitter, under its own id: an event the log holds already is
skipped, so a second import doubles nothing; a derived event keeps the id its worker gave it, and
the workers of the importing stack, deriving from the same causes, give the same ids, kept once.
A line that is not a valid event becomes a dead letter with its reason.

Costs: export reads every segment of the log once (its project's rows kept in memory, sorted by
id); import reads the log's ids once, then the file line by line.
"""

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
from reverie.console import err, fail, progress_bar, warn_quarantined
from schemas.events import Event, InvalidEvent, decode_event
from schemas.kinds import SCHEMA_VERSION, SOURCE_IMPORT
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
    except msgspec.DecodeError:
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


class Imported(msgspec.Struct, kw_only=True):
    """What an import did with the lines of a file."""

    new: int = 0
    known: int = 0  # in the log already, or earlier in the file
    bad: int = 0  # kept as dead letters


def import_json(path: str, wait: bool = True) -> int:
    """Append the events of the export at `path` to the running stack; the exit status."""
    from reverie.importing import wait_until_archived
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
        client = connect(settings, timeout=2.0)
        try:
            client.ping()
            done = _append(settings, client, path, header, _lines(f))
        except (redis.RedisError, OSError) as e:
            return fail(
                f"cannot reach Redis at {settings.redis_shown} ({e}): start reverie with "
                "`reverie up --detach`; importing again sends only what did not arrive"
            )
    err.print(
        f"{path}: {done.new + done.known + done.bad} events of {header.project}: {done.new} new, "
        f"{done.known} already in the log"
        + (
            f", {done.bad} malformed lines kept as dead letters (`reverie status` counts them)"
            if done.bad
            else ""
        ),
        highlight=False,
    )
    if wait and done.new and not wait_until_archived(settings, done.new):
        return fail("the dispatcher has not archived everything yet; see `reverie status`")
    return 0


def _lines(f: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The lines after the header, numbered as an editor numbers them; blank ones left out."""
    for number, line in enumerate(f, start=2):
        if line.strip():
            yield number, line


def _append(
    settings: Settings, client: "redis.Redis", path: str, header: Header, lines: Iterator[tuple[int, bytes]]
) -> Imported:
    """Send the events of `lines` the log does not hold yet; what was done with each."""
    known = EventLog(settings.event_log_dir, warn_quarantined).archived_ids()
    done = Imported()
    with progress_bar() as progress, Emitter(client, SOURCE_IMPORT) as emitter:
        task = progress.add_task("importing events", total=header.events)
        for number, line in lines:
            progress.advance(task)
            try:
                event = decode_event(line)
                if event.project != header.project:  # a file exports one project: nothing lands in another
                    raise Rejected(f"an event of {event.project!r} in an export of {header.project!r}")
                if event.id in known:
                    done.known += 1
                    continue
                emitter.keep(event)
            except (InvalidEvent, Rejected) as e:
                done.bad += 1
                write_dead_letter(settings.dead_letter_dir, DEAD_LETTER_STAGE, f"{path}:{number}: {e}", line)
                continue
            known.add(event.id)
            done.new += 1
    return done
