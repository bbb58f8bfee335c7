"""`reverie sql` reads everything and writes nothing: not the log, not a store, not a snapshot.

These run as root (as the tests do here), which file modes do not stop: what holds must be
reverie's own connection set-up.
"""

import hashlib
import os
import subprocess

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.dead_letters import write_dead_letter
from projections.event_log import EventLog
from projections.projector import replay
from projections.store import current_store
from projections.vectors import MANIFEST
from schemas.events import decode_event
from schemas.settings import Settings
from tests.support.events import event
from tests.support.processes import BIN, typed


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def sql(env: dict[str, str], text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), "sql", text, "--csv"], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def segment(settings: Settings) -> str:
    """A home with three events in one segment, dead letters, projections and a manifest."""
    path = EventLog(settings.event_log_dir).append([decode_event(event(f"p{i}")[1]) for i in range(3)])
    write_dead_letter(settings.dead_letter_dir, "hook", "not JSON", b"garbage")
    replay(settings.event_log_dir, settings.projections_dir)
    vectors = settings.vectors_dir
    os.makedirs(vectors)
    pq.write_table(pa.table({"memory_id": ["m1"], "content_hash": ["h1"]}), os.path.join(vectors, MANIFEST))
    return path


def refused(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    assert "read-only" in result.stderr and "--csv" in result.stderr, result.stderr


def test_copy_over_a_segment_is_refused_and_the_segment_is_left_whole(
    settings: Settings, env: dict[str, str], segment: str
) -> None:
    before = digest(segment)
    for statement in (
        f"COPY (SELECT * FROM read_parquet('{segment}') WHERE false) TO '{segment}' (FORMAT parquet)",
        f"EXPLAIN ANALYZE COPY (SELECT 1 AS id) TO '{segment}' (FORMAT parquet)",
        f"SELECT 1; COPY (SELECT 1 AS id) TO '{segment}' (FORMAT parquet, USE_TMP_FILE false)",
        f"EXPORT DATABASE '{settings.event_log_dir}'",
    ):
        refused(sql(env, statement))
    assert digest(segment) == before
    assert sql(env, "select count(*) from events").stdout.splitlines() == ["count_star()", "3"]


def test_attaching_a_store_for_writing_is_refused(
    settings: Settings, env: dict[str, str], segment: str
) -> None:
    store = current_store(settings.projections_dir)
    assert store is not None
    for database in (store.database, store.snapshot):
        refused(sql(env, f"ATTACH '{database}' AS m; CREATE TABLE m.evil AS SELECT 1 AS x"))
        refused(sql(env, f"DETACH projections; ATTACH '{database}' AS projections"))
    with duckdb.connect(store.database, read_only=True) as db:
        assert not db.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'evil'").fetchall()


def test_the_connection_reaches_no_other_file_and_keeps_its_settings(
    env: dict[str, str], segment: str
) -> None:
    for statement in (
        "SELECT * FROM read_csv('/etc/passwd')",
        "INSTALL httpfs",
        "SET enable_external_access = true",
        "SET allowed_directories = ['/']",
        "CREATE TABLE main.t AS SELECT 1; COPY t TO '/tmp/reverie-escape.csv'",
    ):
        result = sql(env, statement)
        assert result.returncode == 1 and "Traceback" not in result.stderr, (statement, result.stderr)
    assert not os.path.exists("/tmp/reverie-escape.csv")


def test_every_view_still_reads(settings: Settings, env: dict[str, str], segment: str) -> None:
    from projections.sql import run

    tables = run(
        settings, "SELECT table_catalog, table_schema, table_name FROM information_schema.tables"
    ).rows
    names = {name for _, _, name in tables}
    assert {"events", "dead_letters", "prompts", "facts_current", "memory_health", "embedded"} <= names
    for table in tables:
        qualified = ".".join(f'"{part}"' for part in table)
        assert run(settings, f"SELECT count(*) FROM {qualified}").rows, qualified
    assert run(settings, "SELECT count(*) FROM prompts").rows == [(3,)]
    assert run(settings, "SELECT stage FROM dead_letters").rows == [("hook",)]
    assert run(settings, "SELECT memory_id FROM embedded").rows == [("m1",)]
    assert run(settings, "SELECT * FROM facts_as_of(now(), now())").columns
    for text in (
        "EXPLAIN SELECT * FROM events",
        "EXPLAIN ANALYZE SELECT count(*) FROM events",
        "DESCRIBE events",
        "SHOW TABLES",
        "SUMMARIZE prompts",
    ):
        assert sql(env, text).returncode == 0, text


def test_the_shell_refuses_writes_too(
    settings: Settings, segment: str, capsys: "pytest.CaptureFixture[str]"
) -> None:
    from reverie.shell import run_shell

    before = digest(segment)
    lines = [f"COPY (SELECT 1 AS id) TO '{segment}' (FORMAT parquet);", "select count(*) AS n from events;"]
    assert run_shell(settings, typed(lines)) == 0
    captured = capsys.readouterr()
    assert "read-only" in captured.err
    assert "│ 3 │" in captured.out.replace(" ", " ")
    assert digest(segment) == before
