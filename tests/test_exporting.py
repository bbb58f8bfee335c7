"""Exports that round-trip: `reverie export json` writes a project's events, `reverie import-json`
adds them to another home's memory, the same tables there, nothing doubled; a file that is not
an export, or a newer reverie's, is refused with the reason; a bad line is a dead letter."""

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fakeredis
import msgspec
import pytest
import redis

from ingest.dead_letters import count_dead_letters
from ingest.emit import Emitter, Worker
from projections.event_log import EventLog
from projections.folds import TABLES
from projections.projector import replay
from reverie.exporting import FORMAT, Header, NotAnExport, _append, project_events, read_header
from reverie.testing import make_event
from schemas import kinds, memory
from schemas.events import Event, decode_event
from schemas.ids import new_event_id
from schemas.observed import MemoryRemembered
from schemas.settings import STREAM, Settings
from tests.support.captures import TRANSCRIPTS
from tests.support.processes import BIN, Stack, environ_of, fresh_home, settings_of
from tests.support.settling import settled

T0 = datetime(2026, 11, 1, 9, tzinfo=UTC)
P = "/home/marco/projects/spotter"  # where the three small fixture transcripts were recorded
SMALL = ["short.jsonl", "subagent.jsonl", "tool_heavy.jsonl"]


def header_line(**changed: Any) -> bytes:
    said = msgspec.to_builtins(Header(project=P, events=1, exported_at=T0)) | changed
    return json.dumps(said).encode()


@pytest.mark.parametrize(
    ("first_line", "said"),
    [
        (b"", "is not a reverie export"),
        (b"not json at all\n", "is not a reverie export"),
        (b'{"id": "0001", "kind": "prompt.submitted"}\n', "is not a reverie export"),
        (json.dumps({"format": "other"}).encode(), "is not a reverie export"),
        (header_line(version=2), "newer reverie (version 2; this one reads up to 1)"),
        (header_line(schema_version=kinds.SCHEMA_VERSION + 1), "newer reverie (schema version"),
        (header_line(events="many"), "its header is damaged"),
    ],
)
def test_a_file_that_is_no_export_this_reverie_reads_is_refused_with_the_reason(
    first_line: bytes, said: str
) -> None:
    with pytest.raises(NotAnExport, match=said.replace("(", r"\(").replace(")", r"\)")):
        read_header(first_line, "x.jsonl")


def test_a_header_of_this_reverie_reads_back() -> None:
    header = read_header(header_line(), "x.jsonl")
    assert (header.format, header.project, header.events, header.exported_at) == (FORMAT, P, 1, T0)


def remembered(project: str, at: datetime, text: str) -> Event:
    return make_event(
        kinds.MEMORY_REMEMBERED,
        MemoryRemembered(text=text, scope="global"),
        id=new_event_id(int(at.timestamp() * 1000)),
        ts=at,
        recorded_at=at + timedelta(seconds=1),
        project=project,
        source=kinds.SOURCE_CLI,
        session_id="s1",
    )


def test_a_projects_events_are_its_own_in_id_order_from_every_segment(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    later, other, earlier = (
        remembered(p, T0 + timedelta(minutes=m), "x") for p, m in [(P, 2), ("/q", 1), (P, 0)]
    )
    log.append([later, other])
    log.append([earlier])  # an old event archived late: its own segment, after a newer one
    assert [e.id for e in project_events(settings, P)] == [earlier.id, later.id]
    assert project_events(settings, "/nowhere") == []


def streamed(client: Any) -> list[Event]:
    return [decode_event(fields[b"e"]) for _, fields in client.xrange(STREAM)]


def derived_fact(cause: Event) -> Event:
    """A fact a worker derived from `cause`, as the stream carried it."""
    client = fakeredis.FakeRedis()
    fact = memory.FactAsserted(fact_id="f1", source="e:duckdb", relation="uses", description="uses DuckDB")
    with Emitter(client, kinds.SOURCE_WORKER, Worker("extract", 2)) as out:
        out.emit(kinds.FACT_ASSERTED, fact, project=P, caused_by=[cause.id], session_id="s1")
    [event] = streamed(client)
    return event


def test_import_sends_each_event_whole_once_and_keeps_bad_lines_as_dead_letters(settings: Settings) -> None:
    cause = remembered(P, T0, "We chose DuckDB for analytics")
    fact = derived_fact(cause)
    known = remembered(P, T0 + timedelta(minutes=5), "already here")
    EventLog(settings.event_log_dir).append([known])
    encoder = msgspec.json.Encoder()
    lines = [
        encoder.encode(cause),
        b"{not an event\n",
        encoder.encode(fact),
        encoder.encode(known),
        encoder.encode(cause),  # twice in the file: sent once
        json.dumps({**json.loads(encoder.encode(fact)), "kind": "fact.whispered"}).encode(),
        encoder.encode(remembered("/elsewhere", T0, "planted in another project")),
    ]
    client = fakeredis.FakeRedis()
    header = Header(project=P, events=len(lines), exported_at=T0)
    done = _append(settings, client, "x.jsonl", header, iter(enumerate(lines, start=2)))
    assert (done.new, done.known, done.bad) == (2, 2, 3)
    assert streamed(client) == [cause, fact]  # id, times, source, causes, payload: all as they were
    assert count_dead_letters(settings.dead_letter_dir) == 3
    letters = Path(settings.dead_letter_dir).glob("*.json")
    reasons = sorted(json.loads(p.read_bytes())["reason"] for p in letters)
    assert reasons[0].startswith("x.jsonl:3: envelope")
    assert reasons[1] == "x.jsonl:7: unknown event kind 'fact.whispered'"
    assert reasons[2] == f"x.jsonl:8: an event of '/elsewhere' in an export of {P!r}"


# The projection tables compared between the two homes: every table readers see, none left out.
# `project_roots` and `recorded_projects` could differ (each stack identifies the recorded paths
# that are folders on its own disk), but the fixtures' paths exist on neither home's disk.
COMPARED = [table for tables in TABLES.values() for table in tables]


def tables_of(stack: Stack) -> dict[str, list[tuple[Any, ...]]]:
    return {table: sorted(stack.query(f"SELECT * FROM {table}"), key=repr) for table in COMPARED}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], env=env, capture_output=True, text=True, timeout=600)


other_home = pytest.fixture(fresh_home, name="other_home")


def test_export_then_import_into_an_empty_home_gives_the_same_tables_and_a_second_import_nothing(
    stack: Stack, env: dict[str, str], other_home: str, tmp_path: Path
) -> None:
    imported = run(env, "import", *(str(TRANSCRIPTS / name) for name in SMALL))
    assert imported.returncode == 0, imported.stderr
    [(session,)] = stack.query(f"SELECT min(session_id) FROM events WHERE project = '{P}'")
    everywhere = MemoryRemembered(text="Always run mix format", scope="global")  # made in P, for all
    with Emitter(redis.Redis.from_url(stack.settings.redis_url), kinds.SOURCE_CLI) as out:
        out.emit(kinds.MEMORY_REMEMBERED, everywhere, project=P, session_id=session)
    settled(stack.settings)
    source = tables_of(stack)
    [(events, derived)] = stack.query(
        f"SELECT count(*), count(*) FILTER (source = '{kinds.SOURCE_WORKER}') FROM events "
        f"WHERE project = '{P}'"
    )
    assert derived > 0 and source["facts"] and source["episodes"] and source["remembered"]
    export = tmp_path / "spotter.jsonl"
    exported = run(env, "export", "json", "--project", P, "-o", str(export))
    assert exported.returncode == 0, exported.stderr
    assert f"exported {events} events of {P}" in exported.stderr
    assert len(export.read_bytes().splitlines()) == events + 1
    stack.stop()

    other = Stack(environ_of(other_home), settings_of(other_home)).start()
    try:
        first = run(other.env, "import-json", str(export))
        assert first.returncode == 0, first.stderr
        assert f"{events} events of {P}: {events} new, 0 already in the log" in first.stderr
        settled(other.settings)
        assert other.query("SELECT count(*) FROM events") == [(events,)]  # the workers derived nothing new
        assert tables_of(other) == source
        second = run(other.env, "import-json", str(export))
        assert second.returncode == 0, second.stderr
        assert f"0 new, {events} already in the log" in second.stderr
        assert other.query("SELECT count(*), count(DISTINCT id) FROM events") == [(events, events)]
    finally:
        other.stop()
    replay(other.settings.event_log_dir, other.settings.projections_dir)  # the log folded again, in id order
    assert tables_of(other) == source


def test_import_json_of_a_missing_or_foreign_file_says_why_without_a_traceback(
    env: dict[str, str], tmp_path: Path
) -> None:
    foreign = tmp_path / "notes.jsonl"
    foreign.write_text('{"hello": "world"}\n')
    newer = tmp_path / "newer.jsonl"
    newer.write_bytes(header_line(version=9) + b"\n")
    for path, said in [
        (tmp_path / "missing.jsonl", "cannot read"),
        (foreign, "is not a reverie export"),
        (newer, "upgrade reverie to import it"),
    ]:
        result = run(env, "import-json", str(path))
        assert result.returncode == 1 and said in result.stderr and "Traceback" not in result.stderr


def test_export_json_of_a_project_without_events_says_where_to_find_one(env: dict[str, str]) -> None:
    result = run(env, "export", "json", "--project", "/nowhere")
    assert result.returncode == 1 and "holds no event of project '/nowhere'" in result.stderr
    assert result.stdout == ""


def test_export_json_to_a_folder_that_is_not_there_says_so(settings: Settings, env: dict[str, str]) -> None:
    EventLog(settings.event_log_dir).append([remembered(P, T0, "x")])
    result = run(env, "export", "json", "--project", P, "-o", "/no/such/dir/x.jsonl")
    assert result.returncode == 1 and "cannot write /no/such/dir/x.jsonl" in result.stderr
    assert "Traceback" not in result.stderr
