"""SQL over what reverie captured, through DuckDB: the event log, dead letters, projections.

Each query opens its own in-memory DuckDB: views over the Parquet segments (every segment
written so far) and over the projector's last published snapshot, attached read-only. So
`reverie sql` never competes with a writer for a database file, and the projector never
waits for a reader.

`reverie sql` (`run`) only reads. Its connection is locked once the views are set up: DuckDB
may then open no file but the folders and files the views read (`allowed_directories`,
`allowed_paths`, `enable_external_access = false`), and no setting can change again
(`lock_configuration`). DuckDB allows writing wherever it allows reading, though, and file
modes do not stop root, so only statements that read are run: a SELECT, or EXPLAIN of one,
as DuckDB's own parser classifies them. Results leave through stdout (`--csv`, `--json`).

A query that fails on a segment that cannot be read sets it aside (`EventLog.check`) and is
answered again without it; a snapshot that cannot be read is never taken for an empty one.
"""

import glob
import os
import re
from pathlib import Path
from typing import Any

import duckdb

from projections.event_log import SEGMENT_GLOB, EventLog, OnQuarantine
from projections.folds import BOOKKEEPING, FACTS_AS_OF, FACTS_CURRENT, SCHEMA
from projections.folds.base import TEXT_MACROS
from projections.literals import string_literal
from projections.store import SCHEMA_VERSION, current_store, schema_version, unreadable
from projections.vectors import MANIFEST
from schemas.registry import MEMORY_TABLES
from schemas.settings import Settings

ANALYTICS_SQL = (Path(__file__).parent / "analytics.sql").read_text()

# The events behind each memory of `$ids` (a list): a derived one's newest event (`updated_by`),
# else the memory itself, the observed event that recorded it; one row per event
# (a passage: the event that first showed it)
_BEHIND = {
    table: f"{table.name}.updated_by" if table.derived else f"{table.name}.{table.first_event}"
    for table in MEMORY_TABLES.values()
    if table.derived or table.first_event
}
EVENTS_BEHIND = f"""
SELECT DISTINCT coalesce({", ".join(_BEHIND.values())}, m.memory_id)
FROM (SELECT unnest($ids::VARCHAR[]) AS memory_id) m
{" ".join(f"LEFT JOIN {t.name} ON {t.name}.{t.id} = m.memory_id" for t in _BEHIND)}
ORDER BY 1
"""

_EMPTY_EVENTS = """
CREATE VIEW events AS SELECT * FROM (VALUES (
    NULL::VARCHAR, NULL::VARCHAR, NULL::TIMESTAMPTZ, NULL::TIMESTAMPTZ, NULL::VARCHAR, NULL::VARCHAR,
    NULL::VARCHAR, NULL::VARCHAR, NULL::SMALLINT, NULL::JSON, NULL::VARCHAR[]
)) AS t(id, kind, ts, recorded_at, project, session_id, agent, source, v, payload, caused_by) WHERE false
"""
_EMPTY_DEAD_LETTERS = """
CREATE VIEW dead_letters AS SELECT * FROM (VALUES (
    NULL::VARCHAR, NULL::TIMESTAMPTZ, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR, NULL::BIGINT,
    NULL::VARCHAR[]
)) AS t(id, recorded_at, stage, reason, head, size, argv) WHERE false
"""


# Failures that are the query's own: no file of reverie's can be behind them.
_QUERY_ERRORS = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.ConversionException,
    duckdb.OutOfRangeException,
    duckdb.InterruptException,
)
_EXPLAINED = re.compile(
    r"\s*EXPLAIN\s+(?:ANALY[SZ]E\s+|\([^)]*\)\s*)?(?P<query>.*)", re.IGNORECASE | re.DOTALL
)
_EXPORT = 'to keep results, write them out: reverie sql --csv "SELECT ..." > out.csv (or --json)'


class NoSnapshot(LookupError):
    """The projector has published no snapshot yet (or it vanished three times in a row)."""


def _no_snapshot(settings: Settings) -> NoSnapshot:
    return NoSnapshot(
        f"no snapshot of the projections (of this version's schema) in {settings.projections_dir} yet"
    )


class CannotAnswer(Exception):
    """A query `reverie sql` does not answer; the message says why and what to do instead."""


class DamagedSnapshot(CannotAnswer):
    """The current snapshot of the projections cannot be read."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"the projections snapshot {path} cannot be read ({reason}). While the projector runs "
            "(`reverie up`) it publishes a sound one by itself; `reverie replay` rebuilds the "
            "projections from the event log now."
        )


def connect(
    settings: Settings, snapshot_required: bool = False, files: bool = True
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with views over the event log, the dead letters and the projections.

    Before the projector's first snapshot the projection views are empty, unless
    `snapshot_required`: then NoSnapshot is raised (empty is not the same as not known yet).
    DamagedSnapshot if the snapshot exists but cannot be attached. Without `files`, the views
    of the log, the dead letters and the vectors' manifest (`events`, `dead_letters`,
    `embedded`) are empty: for the followers of snapshots, which read the projections alone and
    connect again after every fold (the files cost 30 ms of the 90 at 100k memories).
    """
    db = duckdb.connect(":memory:")
    try:
        if files:
            _event_views(db, settings.event_log_dir, settings.dead_letter_dir)
        else:
            db.execute(_EMPTY_EVENTS + ";" + _EMPTY_DEAD_LETTERS)
        if not _attach_snapshot(db, settings.projections_dir):
            if snapshot_required:
                raise _no_snapshot(settings)
            _empty_projections(db)
        _projection_views(db)
        _embedded_view(db, _manifest(settings) if files else None)
        db.execute(TEXT_MACROS)
        db.execute(FACTS_CURRENT)
        db.execute(ANALYTICS_SQL)
    except BaseException:
        db.close()
        raise
    return db


def reattach(db: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Have `db`, a connection `connect` made, read the current snapshot from now on: in 3 ms,
    where connecting again takes 60 at 100k memories (the views read the projections by name).
    NoSnapshot if there is none; DamagedSnapshot as `connect`."""
    db.execute("DETACH DATABASE IF EXISTS projections")
    if not _attach_snapshot(db, settings.projections_dir):
        raise _no_snapshot(settings)


def read_files(db: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Make the views of the files, empty in a connection made without `files`, read them
    (again: `embedded` is a table once read)."""
    found = db.execute(
        "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'main' "
        "AND table_name IN ('events', 'dead_letters', 'embedded')"
    ).fetchall()
    for name, kind in found:
        db.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} {name}")
    _event_views(db, settings.event_log_dir, settings.dead_letter_dir)
    _embedded_view(db, _manifest(settings))


def lock(db: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """From now on `db` opens no file but those its views read, and its settings stay as they are.

    The snapshot is attached already: it is not among them, so nothing attaches it again."""
    folders = ", ".join(
        string_literal(os.path.join(d, "")) for d in (settings.event_log_dir, settings.dead_letter_dir)
    )
    db.execute(f"SET allowed_directories = [{folders}]")
    db.execute(f"SET allowed_paths = [{string_literal(_manifest(settings))}]")
    db.execute("SET enable_external_access = false")
    db.execute("SET lock_configuration = true")


def run(settings: Settings, text: str, on_quarantine: OnQuarantine | None = None) -> "QueryResult":
    """Answer `text` (SQL that reads) on a fresh locked connection.

    CannotAnswer for SQL that would write, or reach files other than reverie's. A failure on a
    segment that cannot be read sets it aside (`on_quarantine` hears of it) and the query is
    answered again; DamagedSnapshot if the snapshot is what cannot be read.
    """
    try:
        return _answer(settings, text)
    except duckdb.PermissionException as e:
        raise CannotAnswer(f"{e}\nreverie sql reads reverie's own files and writes none; {_EXPORT}") from None
    except _QUERY_ERRORS:
        raise
    except duckdb.Error:
        if not EventLog(settings.event_log_dir, on_quarantine).check():
            _snapshot_damage(settings)
            raise
    return _answer(settings, text)  # once more, without what was set aside


def _answer(settings: Settings, text: str) -> "QueryResult":
    db = connect(settings)
    try:
        lock(db, settings)
        _refuse_writes(db, text)
        return query(db, text)
    finally:
        db.close()


def _refuse_writes(db: duckdb.DuckDBPyConnection, text: str) -> None:
    """CannotAnswer unless every statement of `text` reads: a SELECT, or EXPLAIN of one."""
    for statement in db.extract_statements(text):
        if not _reads(db, statement):
            raise CannotAnswer(
                f"reverie sql is read-only: it runs SELECT (and EXPLAIN SELECT), not "
                f"{statement.type.name}; {_EXPORT}"
            )


def _reads(db: duckdb.DuckDBPyConnection, statement: duckdb.Statement) -> bool:
    if statement.type == duckdb.StatementType.SELECT:
        return True
    explained = (
        _EXPLAINED.fullmatch(statement.query) if statement.type == duckdb.StatementType.EXPLAIN else None
    )
    return explained is not None and all(
        s.type == duckdb.StatementType.SELECT for s in db.extract_statements(explained["query"])
    )


def _snapshot_damage(settings: Settings) -> None:
    """DamagedSnapshot if the current snapshot cannot be read whole (a full scan)."""
    store = current_store(settings.projections_dir)
    if store is not None and os.path.exists(store.snapshot) and (why := unreadable(store.snapshot)):
        raise DamagedSnapshot(store.snapshot, why)


def _manifest(settings: Settings) -> str:
    return os.path.join(settings.vectors_dir, MANIFEST)


def _embedded_view(db: duckdb.DuckDBPyConnection, manifest: str | None) -> None:
    """`embedded`: the memories (id, content hash) the embedder last said the vectors hold, read
    once, now: the embedder replaces its manifest every round, and a view would read the new
    file with what it had learned of the old one ("TProtocolException: Invalid data"). Empty
    without a `manifest`."""
    if manifest is not None and os.path.exists(manifest):
        try:
            source = f"read_parquet({string_literal(manifest)})"
            db.execute(f"CREATE TABLE embedded AS SELECT memory_id, content_hash FROM {source}")
            return
        except duckdb.Error:  # unreadable: as good as none, and the embedder's next round replaces it
            pass
    db.execute(
        "CREATE VIEW embedded AS SELECT NULL::VARCHAR AS memory_id, NULL::VARCHAR AS content_hash WHERE false"
    )


def _empty_projections(db: duckdb.DuckDBPyConnection) -> None:
    db.execute("ATTACH ':memory:' AS projections")
    db.execute("USE projections")
    db.execute(SCHEMA)
    db.execute("USE memory")


def _projection_views(db: duckdb.DuckDBPyConnection) -> None:
    """The tables attached as `projections`, as views."""
    tables = db.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'projections' AND NOT internal"
    ).fetchall()
    for (table,) in tables:
        if table not in BOOKKEEPING:
            db.execute(f'CREATE VIEW main."{table}" AS SELECT * FROM projections."{table}"')
    db.execute(FACTS_AS_OF)


def snapshot_identity(settings: Settings) -> tuple[int, int] | None:
    """What tells the current snapshot from the ones before it (None: there is none yet)."""
    store = current_store(settings.projections_dir)
    try:
        stat = os.stat(store.snapshot) if store else None
    except FileNotFoundError:
        return None
    return (stat.st_ino, stat.st_mtime_ns) if stat else None


def _attach_snapshot(db: duckdb.DuckDBPyConnection, root: str) -> bool:
    """Attach the current snapshot as `projections`; whether there was one to attach. One of
    another schema version (another version of reverie's, which the projector is rebuilding)
    counts as none: these views could not read it. DamagedSnapshot if it is there, still
    current, and cannot be attached."""
    for _ in range(3):  # a replay may remove the generation we just resolved: resolve again
        store = current_store(root)
        if store is None:
            return False
        try:
            db.execute(f"ATTACH {string_literal(store.snapshot)} AS projections (READ_ONLY)")
            if schema_version(db, "projections.meta") != SCHEMA_VERSION:
                db.execute("DETACH projections")
                return False
            return True
        except duckdb.Error as e:
            still = current_store(root)
            if still is not None and still.path == store.path and os.path.exists(store.snapshot):
                raise DamagedSnapshot(store.snapshot, str(e)) from None
    return False


def _event_views(db: duckdb.DuckDBPyConnection, event_log_dir: str, dead_letter_dir: str) -> None:
    if EventLog(event_log_dir).segments():
        pattern = string_literal(os.path.join(event_log_dir, SEGMENT_GLOB))
        db.execute(
            "CREATE VIEW events AS SELECT * REPLACE (payload::JSON AS payload) "
            f"FROM read_parquet({pattern}, union_by_name = true)"
        )
    else:
        db.execute(_EMPTY_EVENTS)
    if glob.glob(os.path.join(dead_letter_dir, "*.json")):
        pattern = string_literal(os.path.join(dead_letter_dir, "*.json"))
        db.execute(
            "CREATE VIEW dead_letters AS SELECT id, recorded_at::TIMESTAMPTZ AS recorded_at, stage, reason, "
            f"head, size, argv FROM read_json({pattern}, format = 'auto')"
        )
    else:
        db.execute(_EMPTY_DEAD_LETTERS)


class QueryResult:
    __slots__ = ("columns", "rows")

    def __init__(self, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
        self.columns = columns
        self.rows = rows


def query(db: duckdb.DuckDBPyConnection, sql: str) -> QueryResult:
    cursor = db.execute(sql)
    columns = [d[0] for d in cursor.description or []]
    return QueryResult(columns, cursor.fetchall())
