"""What recall asks of the DuckDB projections: a memory's features for scoring, the memories
inside a time window, the memories around the entities a prompt names (graph expansion).

Reads the projector's published snapshot through one connection, opened again when a newer
snapshot is published (see projections/sql.py).
"""

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import duckdb
import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from projections import sql, steps
from projections.folds import current
from projections.recall.words import covered, word_set
from projections.store import memories_changed_by
from schemas import kinds
from schemas.settings import Settings


class Features(msgspec.Struct, frozen=True):
    memory_id: str
    kind: str
    text: str
    ts: datetime | None
    project: str | None
    session_id: str | None
    confidence: float
    uses: list[float]  # when it was recalled or otherwise activated (POSIX seconds: a recalled
    # memory has hundreds, which DuckDB hands over far faster as numbers than as datetimes)
    failed: list[float]  # the recalls among them that did not help (workers/dynamics/decay.py)
    emotional: bool  # a correction or a failure: weighs more
    network: str  # world, experience, opinion, observation
    category: str | None  # a fact's (stack, decisions...), or a remembered one's (schemas/categories.py)
    memory_type: str | None  # a fact's: episodic, semantic, procedural
    fans: list[int]  # of each entity in context it is about: in how many memories that entity is
    associated: float  # Hebbian weights between its entities and those in context, summed
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    expired_at: datetime | None = None
    created_at: datetime | None = None
    superseded_by: str | None = None
    outcome: str | None = None  # a remembered memory's: success, or failed (an anti-pattern)
    agent: str | None = None  # a remembered memory's: the agent it belongs to
    derived_from: list[str] = []  # a fact's: the events its assertions came from
    current: bool = True  # a fact's: believed now (projections/folds/facts.py `current`)


# Built off the request path (`Memories.newer`), when a snapshot changed what memories are: what
# scoring needs of every memory but its activations, read into Arrow (30 MB and 70 ms at 100k
# memories, of 0.2 s for the whole snapshot): a recall takes its few dozen rows by position in
# 1.5 ms, where DuckDB's join by index took 13.
_FEATURE_ROWS = f"""
WITH sources AS (  -- what each fact was drawn from: the events behind its assertions
    SELECT h.fact_id AS memory_id, list(DISTINCT p.caused_by ORDER BY p.caused_by) AS derived_from
    FROM fact_history h JOIN provenance p ON p.event_id = h.event_id
    WHERE h.kind = '{kinds.FACT_ASSERTED}'
    GROUP BY h.fact_id
)
SELECT m.memory_id, m.kind, m.text, m.ts, m.project, m.session_id,
    coalesce(f.confidence, o.confidence, 1.0) AS confidence,
    coalesce(e.outcome = 'failure' OR e.emotional_weight > 1 OR f.category = 'errors', false)
        OR EXISTS (SELECT 1 FROM signals s WHERE s.subject = m.memory_id AND s.signal = 'correction')
        AS emotional,
    CASE m.kind WHEN 'fact' THEN f.network WHEN 'opinion' THEN 'opinion' WHEN 'preference' THEN 'opinion'
        WHEN 'observation' THEN 'observation' ELSE 'experience' END AS network,
    coalesce(f.category, rm.category) AS category, f.memory_type,
    f.valid_at, f.invalid_at, f.expired_at, f.created_at, f.superseded_by, rm.outcome, rm.agent,
    coalesce(s.derived_from, []) AS derived_from,
    f.fact_id IS NULL OR ({current("f")}) AS current, m.origin
FROM memory_texts m
LEFT JOIN facts f ON f.fact_id = m.memory_id
LEFT JOIN remembered rm ON rm.event_id = m.memory_id
LEFT JOIN opinions o ON o.opinion_id = m.memory_id
LEFT JOIN episodes e ON e.episode_id = m.memory_id
LEFT JOIN sources s ON s.memory_id = m.memory_id
"""

# Read with every snapshot (every recall is one): when each memory was used (a recall whose
# memory the agent then used, or another activation), and which recalls it was contradicted
# after; a memory shown and left unused is neither (POSIX seconds: a used memory has hundreds,
# which DuckDB hands over far faster as numbers than as datetimes)
_ACTIVATIONS = """
SELECT memory_id,
    list(epoch(activated_at) ORDER BY activated_at) FILTER (cause NOT IN ('unused', 'failed')),
    list(epoch(activated_at) ORDER BY activated_at) FILTER (cause = 'failed')
FROM activation_log WHERE cause <> 'unused' GROUP BY memory_id
"""
Activations = dict[str, tuple[list[float], list[float]]]

# Who each memory is about, for the entities a prompt names: their fans and associations.
_RECALL_TABLES = """
DROP INDEX IF EXISTS recall_entities_memory;
CREATE OR REPLACE TEMP TABLE recall_entities AS
SELECT memory_id, entity_id, count(*) OVER (PARTITION BY entity_id) AS fan FROM memory_entities;
CREATE INDEX recall_entities_memory ON recall_entities (memory_id);

CREATE OR REPLACE TEMP TABLE recall_associations AS SELECT entity_a, entity_b, weight FROM associations;
"""

# of the memories asked for, about the entities in context: each entity's fan (in how many
# memories it is), and the Hebbian weights between its entities and those
_ABOUT_NAMED = """
SELECT m.memory_id,
    coalesce((SELECT list(e.fan) FROM recall_entities e
              WHERE e.memory_id = m.memory_id AND list_contains($named::VARCHAR[], e.entity_id)), []),
    coalesce((SELECT sum(a.weight) FROM recall_entities e JOIN recall_associations a
              ON (a.entity_a = e.entity_id AND list_contains($named::VARCHAR[], a.entity_b))
              OR (a.entity_b = e.entity_id AND list_contains($named::VARCHAR[], a.entity_a))
              WHERE e.memory_id = m.memory_id), 0)
FROM (SELECT unnest($ids::VARCHAR[]) AS memory_id) m
"""


class FeatureRows:
    """Every memory's features but its activations and those that depend on the prompt, a row
    each (an Arrow table), found by memory id; and where each was made. `changed_by`: the
    snapshot's last event that changed what memories say, when they were read (`read_at`, or
    before). They hold until a memory changes or `until`: the first instant after `read_at` at
    which a fact begins or ends, and so is current or no longer (None: none will)."""

    def __init__(self, table: pa.Table, changed_by: str | None, read_at: datetime) -> None:
        # one chunk: taking rows from several copies them all first (3 ms a recall at 100k,
        # where one chunk takes 0.07; making it costs 35 ms, once)
        self.table = table.combine_chunks()
        self.changed_by = changed_by
        self.position = {m: i for i, m in enumerate(table.column("memory_id").to_pylist())}
        later = [_first_after(table[column], read_at) for column in ("valid_at", "invalid_at")]
        self.until = min((t for t in later if t is not None), default=None)

    def hold(self, changed_by: str | None, now: datetime) -> bool:
        """Whether these are still the features of a snapshot whose mark is `changed_by`, `now`."""
        return (
            changed_by is not None
            and changed_by == self.changed_by
            and (self.until is None or now < self.until)
        )

    def get(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The features of those of `ids` it holds, by name, without activations, `fans` and
        `associated`."""
        found = pa.array([self.position[m] for m in ids if m in self.position], pa.int64())
        taken = self.table.drop_columns(["origin"]).take(found)
        columns = {name: taken.column(name).to_pylist() for name in taken.column_names}
        return {
            m: {name: values[i] for name, values in columns.items()}
            for i, m in enumerate(columns["memory_id"])
        }

    def origins(self) -> dict[str, str]:
        """Where each global memory (of no project) was made, for those made in one."""
        table = self.table
        made = table.filter(
            pc.and_(pc.is_null(table["project"]), pc.greater(pc.utf8_length(table["origin"]), 0))
        )
        return dict(zip(made["memory_id"].to_pylist(), made["origin"].to_pylist(), strict=True))


def _feature_rows(db: duckdb.DuckDBPyConnection, read: FeatureRows | None) -> FeatureRows:
    """The features of the snapshot `db` reads: those `read` before, if they still hold."""
    changed_by = memories_changed_by(db, "projections.meta")
    now = datetime.now(UTC)  # before the query's now(): no fact's start or end falls between
    if read is not None and read.hold(changed_by, now):
        return read
    return FeatureRows(db.sql(_FEATURE_ROWS).to_arrow_table(), changed_by, now)


def _first_after(times: pa.ChunkedArray, instant: datetime) -> datetime | None:
    later = pc.filter(times, pc.greater(times, pa.scalar(instant, type=times.type)))
    found = pc.min(later).as_py()
    return found if isinstance(found, datetime) else None


def _activations(db: duckdb.DuckDBPyConnection) -> Activations:
    return {m: (uses or [], failed or []) for m, uses, failed in db.execute(_ACTIVATIONS).fetchall()}


# Entities the prompt names, then breadth first along facts to depth 2; the facts met on the
# way are the graph's memories, the nearer first.
_NAMED = """
SELECT entity_id FROM entities
WHERE contains($text, lower(name)) AND length(name) >= 3 OR list_has_any(aliases, $words)
"""

_GRAPH = f"""
WITH RECURSIVE walk(entity_id, depth) AS (
    SELECT unnest($named::VARCHAR[]), 0
    UNION
    SELECT CASE WHEN f.source = w.entity_id THEN f.target ELSE f.source END, w.depth + 1
    FROM walk w JOIN facts f ON w.entity_id IN (f.source, f.target)
    WHERE w.depth < 2 AND {current("f")}
)
SELECT f.fact_id, min(w.depth) AS depth FROM walk w
JOIN facts f ON w.entity_id IN (f.source, f.target)
WHERE {current("f")}
GROUP BY ALL ORDER BY depth, max(f.confidence) DESC LIMIT $limit
"""


# How related the projects the global memories were made in are to the others (HORA's measure,
# the view related_projects): read once per snapshot, a row per pair of projects related to
# one's origin; never without global memories.
_RELATED = """
SELECT project, other, relevance FROM related_projects
WHERE relevance > 0 AND list_contains($origins::VARCHAR[], other)
"""


class Kinship:
    """Where each global memory was made, and how related projects are to those places.

    `relatedness(memory_id, project)` answers for any memory in a dict lookup or two: 1 for a
    memory of the project itself, or global and made there, or made in no project; otherwise
    the view related_projects' measure of the two projects, 0 (unrelated) to 1.
    """

    def __init__(self, origins: dict[str, str], related: dict[tuple[str, str], float]) -> None:
        self.origins = origins  # a global memory's id -> the project it was made in
        self.related = related  # (project, other) -> their relevance, above 0

    def relatedness(self, memory_id: str, project: str) -> float:
        origin = self.origins.get(memory_id)
        if origin is None or origin == project:
            return 1.0
        return self.related.get((project, origin), 0.0)


def _kinship(db: duckdb.DuckDBPyConnection, features: FeatureRows) -> Kinship:
    """The kinship of the snapshot `db` reads, whose `features` were read."""
    origins = features.origins()
    if not origins:
        return Kinship({}, {})
    made_in = sorted(set(origins.values()))
    related = {(a, b): float(r) for a, b, r in db.execute(_RELATED, {"origins": made_in}).fetchall()}
    return Kinship(origins, related)


_AGENT_MEMORIES = """
SELECT m.text FROM remembered r JOIN memory_texts m ON m.memory_id = r.event_id
WHERE r.agent = $agent AND (r.project = $project OR r.scope = 'global')
ORDER BY r.ts DESC LIMIT $limit
"""


# the project's last decisions, each once however often it was stated (in as many facts)
_DECISIONS = """
        SELECT arg_max(description, valid_at) FROM facts_current
        WHERE category = 'decisions' AND (project = $project OR scope = 'global')
        GROUP BY lower(trim(description)) ORDER BY max(valid_at) DESC, min(fact_id) LIMIT 5"""
MANIFEST = {
    "key_decisions": _DECISIONS,
    "files_touched": """
        SELECT file FROM (SELECT unnest(files_touched) AS file, ts FROM tool_uses WHERE session_id = $session)
        GROUP BY file ORDER BY max(ts) DESC LIMIT 20""",
}  # and its blockers: projections/steps.py
LAST_MESSAGE = """
SELECT text, ts FROM messages WHERE session_id = $session AND project = $project AND text IS NOT NULL
ORDER BY ts DESC LIMIT 1"""


class Continuity(msgspec.Struct, frozen=True):
    """What a new session of a project should know from the ones before it: the last one's
    blockers are the errors nothing after them in it shows solved, and the errors it solved are
    told apart, with what solved them (projections/steps.py)."""

    last_summary: str | None
    decisions: list[str]
    files: list[str]
    blockers: list[str]
    preferences: list[str]
    failures: list[str]
    solved: list[str] = []


_LAST_SESSION = """
SELECT session_id FROM sessions WHERE project = $project AND session_id <> $session
ORDER BY last_event_at DESC LIMIT 1"""
_CONTINUITY = {
    "last_summary": """
        SELECT coalesce(
            (SELECT summary FROM compactions c WHERE c.session_id = s.session_id AND summary IS NOT NULL
             ORDER BY ts DESC LIMIT 1),
            (SELECT text FROM messages m WHERE m.session_id = s.session_id ORDER BY ts DESC LIMIT 1))
        FROM sessions s WHERE s.project = $project AND s.session_id <> $session
        ORDER BY s.last_event_at DESC LIMIT 1""",
    "decisions": _DECISIONS,
    "files": """
        SELECT file FROM (SELECT unnest(files_touched) AS file, ts FROM tool_uses WHERE project = $project)
        GROUP BY file ORDER BY max(ts) DESC LIMIT 20""",
    "failures": """
        SELECT signature || ' (' || occurrences || 'x)' FROM failures WHERE project = $project
        ORDER BY occurrences DESC LIMIT 5""",
}


# The preferences a new session is told: those the user pinned, then those that recurred
# (crystallized: strength s / (s + 2) after s sessions), then the rules stated in fewer sessions,
# each with how many, at once (a rule said once is a rule); the newest first, at most _PREFERENCES;
# none the user forgot.
_PREFERENCES = 8
PREFERRED = """
SELECT statement, round(2 * strength / (1 - least(strength, 0.99)))::INT AS sessions, true AS recurring,
    crystallized_at AS ts, strength, coalesce(pin.pinned, false) AS pinned, preference_id AS id,
    pin.source AS pinned_by
FROM preferences LEFT JOIN preference_pins pin USING (preference_id)
WHERE (project = $project OR scope = 'global')
    AND NOT EXISTS (SELECT 1 FROM forgotten x WHERE x.memory_id = preference_id
                    AND (scope = 'global' OR x.project = preferences.project))
UNION ALL
SELECT f.description, count(DISTINCT p.session_id), false, min(f.valid_at), 0.0, false, f.fact_id, NULL
FROM facts_current f
JOIN fact_history h USING (fact_id)
JOIN provenance v ON v.event_id = h.event_id
JOIN prompts p ON p.event_id = v.caused_by AND p.agent = 'main'
WHERE f.relation = 'prefers' AND (f.project = $project OR f.scope = 'global')
    AND NOT EXISTS (SELECT 1 FROM forgotten x WHERE x.memory_id = f.fact_id
                    AND (f.scope = 'global' OR x.project = f.project))
GROUP BY f.fact_id, f.description
ORDER BY pinned DESC, recurring DESC, strength DESC, ts DESC, statement
"""


def told_preferences(rows: Sequence[Sequence[Any]], limit: int = _PREFERENCES) -> list[str]:
    """Each preference of `rows` (PREFERRED's) once, with how often it was said, at most `limit`:
    a stated rule a recurring one says already is that one."""
    told: list[tuple[str, frozenset[str]]] = []
    for statement, sessions, recurring, _, _, pinned, *_ in rows:
        words = word_set(statement)
        if any(covered(words, other) >= _SAME_RULE for _, other in told):
            continue
        said = "stated once" if sessions <= 1 else f"stated in {sessions} sessions"
        how = ("pinned, " if pinned else "") + ("recurring: " if recurring else "")
        told.append((f"{statement} ({how}{said})", words))
    return [text for text, _ in told[:limit]]


_SAME_RULE = 0.8  # the share of a rule's words another says, for them to be one


class Opened(NamedTuple):
    """A snapshot opened for recall, and what recall read of it at once."""

    db: duckdb.DuckDBPyConnection
    identity: tuple[int, int] | None
    kinship: Kinship
    features: FeatureRows
    activations: Activations


class Memories:
    """The projections, as recall reads them.

    `follow`: every call first checks for a newer snapshot and opens it (for one-off readers).
    The warm service does not follow: it calls `newer` off the request path, then `swap`
    between two recalls, so that no recall waits for a connection to open and warm up.

    Two connections take turns: the one swapped out is moved to the next snapshot (3 ms at
    100k memories, where a new connection's views take 50 ms to bind), unless a reader still
    holds it.
    """

    def __init__(self, settings: Settings, follow: bool = True) -> None:
        self.settings = settings
        self.follow = follow
        self._db: duckdb.DuckDBPyConnection | None = None
        self._spare: duckdb.DuckDBPyConnection | None = None
        self._lent: Counter[duckdb.DuckDBPyConnection] = Counter()  # the cursors readers hold of each
        self._retired: set[duckdb.DuckDBPyConnection] = set()  # swapped out while lent
        self._lending = threading.Lock()
        self._snapshot: tuple[int, int] | None = None
        self._kinship = Kinship({}, {})
        self._features: FeatureRows | None = None
        self._activations: Activations = {}

    def db(self) -> duckdb.DuckDBPyConnection:
        """The connection recall reads (opened on first use)."""
        if (self._db is None or self.follow) and (opened := self.newer()):
            self.swap(opened)
        assert self._db is not None
        return self._db

    def newer(self) -> Opened | None:
        """A connection to the latest snapshot, if newer than the one read, its tables for
        recall built, its features and kinship read."""
        identity = sql.snapshot_identity(self.settings)
        if self._db is not None and identity == self._snapshot:
            return None
        spare, self._spare = self._spare, None
        db = self._moved(spare) or sql.connect(self.settings, files=False)
        try:
            db.execute(_RECALL_TABLES)
            features = _feature_rows(db, self._features)
            kinship = self._kinship if features is self._features else _kinship(db, features)
            return Opened(db, identity, kinship, features, _activations(db))
        except BaseException:
            db.close()
            raise

    def _moved(self, db: duckdb.DuckDBPyConnection | None) -> duckdb.DuckDBPyConnection | None:
        """`db` reading the current snapshot; None if it cannot, or there is none (then it is
        closed)."""
        if db is None:
            return None
        try:
            sql.reattach(db, self.settings)
        except (sql.NoSnapshot, duckdb.Error):
            db.close()
            return None
        return db

    def swap(self, opened: Opened) -> None:
        """Read through `opened` from now on (no recall may be running)."""
        old = self._db
        self._db, self._snapshot, self._kinship, self._features, self._activations = opened
        if old is None:
            return
        with self._lending:
            if self._lent[old]:  # closing it would close its readers' cursors: the last closes it
                self._retired.add(old)
            else:
                if self._spare is not None:
                    self._spare.close()
                self._spare = old

    @contextlib.contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """A connection of its own to the snapshot recall reads (it outlives a swap), for a reader
        in another thread; None before the first snapshot. Its views of the files are empty
        until sql.read_files. Take it where no swap can run."""
        db = self._db
        if db is None:
            yield None
            return
        with self._lending:
            self._lent[db] += 1
        cursor = db.cursor()
        try:
            yield cursor
        finally:
            cursor.close()
            with self._lending:
                self._lent[db] -= 1
                if not self._lent[db]:
                    del self._lent[db]
                    if db in self._retired:
                        self._retired.discard(db)
                        db.close()

    def kinship(self) -> Kinship:
        """Where the snapshot's global memories were made, and how related projects are (read
        with the snapshot: no query)."""
        self.db()
        return self._kinship

    def features(self, ids: list[str], named: list[str] | None = None) -> dict[str, Features]:
        """What scoring needs of these memories; `named`: the entities in context."""
        if not ids:
            return {}
        db = self.db()
        assert self._features is not None
        found = self._features.get(ids)
        about: dict[str, tuple[list[int], float]] = {}
        if named and found:
            rows = db.execute(_ABOUT_NAMED, {"ids": list(found), "named": named}).fetchall()
            about = {m: (fans, associated) for m, fans, associated in rows}
        features = {}
        for m, row in found.items():
            uses, failed = self._activations.get(m, ([], []))
            fans, associated = about.get(m, ([], 0.0))
            features[m] = Features(**row, uses=uses, failed=failed, fans=fans, associated=associated)
        return features

    def named_entities(self, text: str, words: list[str]) -> list[str]:
        """The entities `text` names (by name, or by one of its `words` as an alias)."""
        return [e for (e,) in self.db().execute(_NAMED, {"text": text.lower(), "words": words}).fetchall()]

    def around_entities(self, named: list[str], limit: int) -> list[str]:
        """The facts along `named` entities, breadth first to depth 2, the nearer first."""
        if not named:
            return []
        rows = self.db().execute(_GRAPH, {"named": named, "limit": limit}).fetchall()
        return [fact_id for fact_id, _ in rows]

    def continuity(self, project: str | None, session_id: str | None) -> Continuity:
        found = {name: self._values(query, project, session_id or "") for name, query in _CONTINUITY.items()}
        summary = found.pop("last_summary")
        preferred = self.db().execute(PREFERRED, {"project": project}).fetchall()
        last = self._values(_LAST_SESSION, project, session_id or "")
        read = steps.reading(self.db(), last[0]) if last else None
        return Continuity(
            summary[0] if summary else None,
            preferences=told_preferences(preferred),
            blockers=steps.blockers(read) if read else [],
            solved=steps.solved(read) if read else [],
            **found,
        )

    def remembered_by(self, project: str | None, agent: str, limit: int = 20) -> list[str]:
        """What was remembered for `agent` (a subagent type) in `project` or everywhere, newest
        first; an anti-pattern says so."""
        rows = self.db().execute(_AGENT_MEMORIES, {"project": project, "agent": agent, "limit": limit})
        return [text for (text,) in rows.fetchall()]

    def manifest(self, project: str | None, session_id: str) -> dict[str, list[str]]:
        """What a compaction manifest holds of `session_id`, as far as the snapshot knows it:
        key_decisions, files_touched, blockers (the errors nothing after them shows solved yet)."""
        found = {name: self._values(query, project, session_id) for name, query in MANIFEST.items()}
        return {**found, "blockers": steps.blockers(steps.reading(self.db(), session_id))}

    def last_message(self, project: str | None, session_id: str) -> tuple[str, datetime] | None:
        """The agent's last message in `session_id` as far as the snapshot knows, and when."""
        found = self.db().execute(LAST_MESSAGE, {"project": project, "session": session_id}).fetchone()
        return (found[0], found[1]) if found else None

    def _values(self, query: str, project: str | None, session_id: str) -> list[str]:
        """The first column of `query`, given those of $project and $session it names."""
        given = {"project": project, "session": session_id}
        rows = self.db().execute(query, {k: v for k, v in given.items() if f"${k}" in query}).fetchall()
        return [value for (value,) in rows if value]

    def close(self) -> None:
        for db in (self._db, self._spare):
            if db is not None:
                db.close()
        self._db = self._spare = None
