"""Why memory holds something: where a fact, an entity, an episode or another memory comes from.

Reads the projections (the thing as memory holds it, and `provenance`: the derived events about
it and what each came from) and the event log (those events, down to what was observed), through
one DuckDB connection: the recall service's (`reverie why` and memory_why ask it), or one opened
on the files when the stack is down. Each observed event's line is found in the transcript it
names. A memory no worker derived (what `reverie remember` recorded, a prompt) is shown with the
event that is it: who recorded it, when, in which session and transcript line. An id may be
given by a prefix that only it has.
"""

from typing import Any

import duckdb
import msgspec

from ingest.transcripts import locate
from schemas.registry import DERIVED_KINDS, MEMORY_TABLES
from schemas.text.harness import clean
from schemas.why import Derivation, Source, What, Why, cut

_TABLES: list[tuple[What, str, str, str]] = [  # what, table, id column, title column
    ("fact", "facts", MEMORY_TABLES["facts"].id, MEMORY_TABLES["facts"].text),
    ("entity", "entities", "entity_id", "name"),
    ("episode", "episodes", MEMORY_TABLES["episodes"].id, MEMORY_TABLES["episodes"].text),
    ("memory", "memory_texts", "memory_id", "text"),  # what else recall shows: remembered, a prompt...
]
_DEPTH = 4  # derived events derived from derived events, this far


class Unknown(LookupError):
    pass


def why(db: duckdb.DuckDBPyConnection, wanted: str, project: str | None = None) -> Why:
    """What memory holds under `wanted` (an id, or a prefix of one only), and why, as `db` (the
    projections and the event log's views) reads it; given a `project`, only of what that
    project may see (`memory_scopes`). Unknown if no fact, entity, episode or other memory has
    it, or several do."""
    what, table, column, title, ids = _find(db, wanted)
    if project is not None:
        ids = [i for i in ids if visible(db, i, project)]
        if not ids:
            raise Unknown(f"no memory has the id {wanted!r} in this project ({project})")
    if len(ids) != 1:
        raise Unknown(f"{wanted!r} begins several ids: {', '.join(ids[:5])}; give more of it")
    [id_] = ids
    details = _details(db, table, column, id_)
    heading = str(details.pop(title, None) or id_)
    derivations = [_derivation(db, row) for row in _derived_about(db, id_)]
    recorded = _recorded(db, id_) if what == "memory" else None
    return Why(id=id_, what=what, title=heading, details=details, derivations=derivations, recorded=recorded)


def _find(db: duckdb.DuckDBPyConnection, wanted: str) -> tuple[What, str, str, str, list[str]]:
    """Where `wanted` is: what it is, its table, id and title columns, and the ids it begins."""
    for what, table, column, title in _TABLES:
        query = f"SELECT {column} FROM {table} WHERE starts_with({column}, ?) ORDER BY 1 LIMIT 6"
        if ids := [r[0] for r in db.execute(query, [wanted]).fetchall()]:
            return what, table, column, title, ids
    if ids := _provenance_subjects(db, wanted):
        return "memory", "provenance", "subject", "subject", ids
    raise Unknown(
        f"no fact, entity, episode or other memory has the id {wanted!r}. Ids look like fact:…, "
        "file:… (an entity's type, then its digest) or episode:…; list some with: "
        'reverie sql "SELECT fact_id, description FROM facts LIMIT 20"'
    )


def visible(db: duckdb.DuckDBPyConnection, id_: str, project: str) -> bool:
    """Whether `project` may see the memory or entity `id_`: its own, or one that holds everywhere."""
    query = "SELECT 1 FROM memory_scopes WHERE id = $id AND (project = $project OR project IS NULL)"
    return db.execute(query, {"id": id_, "project": project}).fetchone() is not None


def _provenance_subjects(db: duckdb.DuckDBPyConnection, wanted: str) -> list[str]:
    query = "SELECT DISTINCT subject FROM provenance WHERE starts_with(subject, ?) ORDER BY 1 LIMIT 10"
    return [r[0] for r in db.execute(query, [wanted]).fetchall()]


# what a kind of memory in memory_texts keeps beside its text: its table and id column
_MORE = {"remembered": ("remembered", "event_id")}


def _details(db: duckdb.DuckDBPyConnection, table: str, column: str, id_: str) -> dict[str, Any]:
    if table == "provenance":
        return {}
    details = _row(db, table, column, id_)
    if table == "memory_texts" and (more := _MORE.get(details.get("kind", ""))):
        details |= {k: v for k, v in _row(db, *more, id_).items() if k not in details and v != []}
    return details


def _row(db: duckdb.DuckDBPyConnection, table: str, column: str, id_: str) -> dict[str, Any]:
    """The row of `table` whose `column` is `id_`, but for it and what it holds as null."""
    cursor = db.execute(f"SELECT * FROM {table} WHERE {column} = ?", [id_])
    names = [d[0] for d in cursor.description or []]
    row = cursor.fetchone() or ()
    return {
        name: value for name, value in zip(names, row, strict=True) if value is not None and name != column
    }


def _recorded(db: duckdb.DuckDBPyConnection, id_: str) -> Source | None:
    """The observed event that is the memory `id_` itself, if one is (remembered, a prompt...)."""
    found = _sources(db, [id_], 0)
    return found[0] if found and found[0].kind not in DERIVED_KINDS else None


def _derived_about(db: duckdb.DuckDBPyConnection, id_: str) -> list[tuple[Any, ...]]:
    return db.execute(
        """
        SELECT e.id, e.kind, e.ts, e.recorded_at, e.payload, e.caused_by
        FROM events e WHERE e.id IN (SELECT event_id FROM provenance WHERE subject = ?)
        ORDER BY e.id
        """,
        [id_],
    ).fetchall()


def _derivation(db: duckdb.DuckDBPyConnection, row: tuple[Any, ...]) -> Derivation:
    event_id, kind, ts, recorded_at, payload, caused_by = row
    said = msgspec.json.decode(payload) if isinstance(payload, str) else {}
    says = next(
        (str(said[k]) for k in ("description", "reason", "title", "name", "statement") if said.get(k)), ""
    )
    return Derivation(
        event_id=event_id,
        kind=kind,
        ts=ts,
        recorded_at=recorded_at,
        says=says,
        caused_by=_sources(db, list(caused_by or []), _DEPTH),
    )


def _sources(db: duckdb.DuckDBPyConnection, ids: list[str], depth: int) -> list[Source]:
    if not ids:
        return []
    rows = db.execute(
        "SELECT id, kind, ts, project, session_id, source, payload, caused_by FROM events "
        "WHERE id IN (SELECT unnest(?)) ORDER BY id",
        [ids],
    ).fetchall()
    sources = []
    for event_id, kind, ts, project, session_id, by, payload, caused_by in rows:
        said = msgspec.json.decode(payload) if isinstance(payload, str) else {}
        source = Source(
            event_id=event_id,
            kind=kind,
            ts=ts,
            project=project,
            session_id=session_id,
            by=by,
            excerpt=_excerpt(kind, said),
        )
        if kind in DERIVED_KINDS:
            source.caused_by = _sources(db, list(caused_by or []), depth - 1) if depth > 0 else []
        elif isinstance(path := said.get("agent_transcript_path") or said.get("transcript_path"), str):
            source.transcript = path
            source.line = locate(path, event_id, kind, said)
        sources.append(source)
    return sources


def _excerpt(kind: str, said: dict[str, Any]) -> str:
    if isinstance(text := said.get("prompt") or said.get("last_assistant_message"), str):
        return cut(clean(text))
    if isinstance(tool := said.get("tool_name"), str):
        given = said.get("tool_input")
        given = given if isinstance(given, dict) else {}
        detail = next((str(given[k]) for k in ("command", "file_path", "pattern", "url") if given.get(k)), "")
        return cut(f"{tool} {detail}".strip())
    return cut(
        next((str(said[k]) for k in ("text", "description", "reason", "title", "name") if said.get(k)), "")
    )
