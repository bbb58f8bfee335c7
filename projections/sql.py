"""SQL over what reverie captured, through DuckDB: views over the event log and dead letters.

Each query opens its own in-memory DuckDB over the Parquet segments, so `reverie sql` never
competes with a writer for a database file and sees every segment written so far.
"""

import glob
import os
from typing import Any

import duckdb

from projections.event_log import SEGMENT_GLOB, EventLog

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


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(event_log_dir: str, dead_letter_dir: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the views `events` and `dead_letters`."""
    db = duckdb.connect(":memory:")
    if EventLog(event_log_dir).segments():
        pattern = _quote(os.path.join(event_log_dir, SEGMENT_GLOB))
        db.execute(
            "CREATE VIEW events AS SELECT * REPLACE (payload::JSON AS payload) "
            f"FROM read_parquet({pattern}, union_by_name = true)"
        )
    else:
        db.execute(_EMPTY_EVENTS)
    if glob.glob(os.path.join(dead_letter_dir, "*.json")):
        pattern = _quote(os.path.join(dead_letter_dir, "*.json"))
        db.execute(
            "CREATE VIEW dead_letters AS SELECT id, recorded_at::TIMESTAMPTZ AS recorded_at, stage, reason, "
            f"head, size, argv FROM read_json({pattern}, format = 'auto')"
        )
    else:
        db.execute(_EMPTY_DEAD_LETTERS)
    return db


class QueryResult:
    __slots__ = ("columns", "rows")

    def __init__(self, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
        self.columns = columns
        self.rows = rows


def query(db: duckdb.DuckDBPyConnection, sql: str) -> QueryResult:
    cursor = db.execute(sql)
    columns = [d[0] for d in cursor.description or []]
    return QueryResult(columns, cursor.fetchall())
