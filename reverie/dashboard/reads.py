"""What the dashboard's pages show, read from the projector's last snapshot.

One DuckDB connection made by projections/sql.py (the views `reverie sql` has), attached again
to the newest snapshot when the projector publishes one (3 ms), so a page reads what `reverie
sql` would; queries take turns on it (one lock: DuckDB runs each on every core already).
DuckDB is imported with the first page asked for: a dashboard nobody opens holds 45 MB, not 100.

Every reader takes `project`: None reads every project, else that project's rows and what holds
everywhere (a global fact, a global preference).
"""

import threading
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from projections.curation import section
from projections.folds import current
from schemas.settings import Settings

if TYPE_CHECKING:
    import duckdb

T = TypeVar("T")

Row = dict[str, Any]

GRAPH_NODES = 300  # the most connected entities the graph opens with
MOST_NODES = 5000  # the most it shows at once (`?nodes=`)
PAGE = 50  # rows a list shows at once

# the facts in `project`'s scope: ? IS NULL reads every project
_IN_SCOPE = "($project IS NULL OR f.project = $project OR f.scope = 'global')"


def _forgotten(alias: str) -> str:
    """Whether the fact `alias` names was asked to be forgotten where it holds (as memory_texts
    hides it: in its project, or anywhere for one that holds everywhere)."""
    return (
        f"EXISTS (SELECT 1 FROM forgotten fo WHERE fo.memory_id = {alias}.fact_id "
        f"AND ({alias}.scope = 'global' OR fo.project = {alias}.project))"
    )


class Projections:
    """The last published snapshot of the projections, read by every page."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._db: duckdb.DuckDBPyConnection | None = None
        self._seen: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def rows(self, sql: str, **params: Any) -> list[Row]:
        """The rows `sql` reads, each a dict by column name; `params` it names ($name) bound."""
        named = {name: value for name, value in params.items() if f"${name}" in sql}
        with self._lock:
            cursor = self._fresh().execute(sql, named)
            columns = [d[0] for d in cursor.description or []]
            return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

    def read(self, reader: Callable[["duckdb.DuckDBPyConnection"], T]) -> T:
        """What `reader` reads of the snapshot (a part of reverie that reads one itself)."""
        with self._lock:
            return reader(self._fresh())

    def value(self, sql: str, **params: Any) -> Any:
        """The first column of the first row `sql` reads (None: no row)."""
        found = self.rows(sql, **params)
        return next(iter(found[0].values())) if found else None

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _fresh(self) -> "duckdb.DuckDBPyConnection":
        from projections.sql import connect, reattach, snapshot_identity

        identity = snapshot_identity(self.settings)
        if self._db is None or (self._seen is None and identity is not None):
            if self._db is not None:
                self._db.close()
            self._db = connect(self.settings)
        elif identity != self._seen and identity is not None:
            reattach(self._db, self.settings)
        self._seen = identity
        return self._db


def projects(db: Projections) -> list[str]:
    """Every project memory knows of, the busiest first."""
    return [
        r["project"]
        for r in db.rows(
            "SELECT project FROM sessions WHERE project IS NOT NULL GROUP BY project ORDER BY count(*) DESC"
        )
    ]


def overview(db: Projections, project: str | None) -> Row:
    """The counts the overview shows."""
    counts = db.rows(
        f"""
        SELECT
            (SELECT count(*) FROM sessions WHERE $project IS NULL OR project = $project) AS sessions,
            (SELECT count(*) FROM prompts WHERE $project IS NULL OR project = $project) AS prompts,
            (SELECT count(*) FROM facts_current f WHERE {_IN_SCOPE} AND NOT {_forgotten("f")}) AS facts,
            (SELECT count(DISTINCT e) FROM (
                SELECT unnest([f.source, f.target]) AS e FROM facts_current f WHERE {_IN_SCOPE} AND NOT {_forgotten("f")})
             WHERE e IS NOT NULL) AS entities,
            (SELECT count(*) FROM forgotten WHERE $project IS NULL OR project = $project) AS forgotten
        """,
        project=project,
    )[0]
    counts["kinds"] = db.rows(
        "SELECT kind, count(*) AS memories FROM memory_texts "
        "WHERE $project IS NULL OR project = $project OR project IS NULL GROUP BY kind ORDER BY memories DESC",
        project=project,
    )
    counts["tiers"] = tiers(db, project)
    return counts


def tiers(db: Projections, project: str | None) -> list[Row]:
    return db.rows(
        "SELECT tier, count(*) AS facts FROM memory_tiers WHERE $project IS NULL OR project = $project "
        "GROUP BY tier ORDER BY facts DESC",
        project=project,
    )


def activity(db: Projections, project: str | None) -> Row:
    """Prompts, tool uses and facts learned per day, every day from the first to the last (none
    is 0): columns for a chart (days as epoch seconds, UTC)."""
    rows = db.rows(
        f"""
        WITH days AS (
            SELECT date_trunc('day', ts) AS day, 1 AS prompts, 0 AS tools, 0 AS facts
            FROM prompts WHERE $project IS NULL OR project = $project
            UNION ALL
            SELECT date_trunc('day', ts), 0, 1, 0 FROM tool_uses WHERE $project IS NULL OR project = $project
            UNION ALL
            SELECT date_trunc('day', f.created_at), 0, 0, 1 FROM facts f WHERE {_IN_SCOPE}
        )
        SELECT epoch(day)::BIGINT AS day, sum(prompts) AS prompts, sum(tools) AS tools, sum(facts) AS facts
        FROM days WHERE day IS NOT NULL GROUP BY day ORDER BY day
        """,
        project=project,
    )
    by_day = {r["day"]: r for r in rows}
    days = list(range(rows[0]["day"], rows[-1]["day"] + 1, 86_400)) if rows else []
    empty = {"prompts": 0, "tools": 0, "facts": 0}
    return {
        "day": days,
        **{key: [by_day.get(day, empty)[key] for day in days] for key in ("prompts", "tools", "facts")},
    }


def sessions(db: Projections, project: str | None, offset: int = 0, limit: int = PAGE) -> list[Row]:
    """Sessions, the newest first, with their episode, outcome and mood."""
    return db.rows(
        """
        SELECT s.session_id, s.project, s.started_at, s.last_event_at, s.prompts, s.tool_uses, s.errors,
            s.end_reason, e.title AS episode, e.outcome,
            (SELECT avg(g.sentiment) FROM signals g WHERE g.session_id = s.session_id AND g.signal = 'mood') AS mood
        FROM sessions s
        LEFT JOIN episodes e ON e.session_id = s.session_id  -- its own, consolidated or not
        WHERE $project IS NULL OR s.project = $project
        ORDER BY coalesce(s.started_at, s.first_event_at) DESC NULLS LAST, s.session_id
        LIMIT $limit OFFSET $offset
        """,
        project=project,
        limit=limit,
        offset=offset,
    )


def session(db: Projections, session_id: str) -> Row | None:
    """One session: its row, its episode, its errors and what fixed them, its mood, its events
    in order."""
    found = db.rows("SELECT * FROM sessions WHERE session_id = $id", id=session_id)
    if not found:
        return None
    row = found[0]
    row["episodes"] = db.rows(
        "SELECT title, summary, outcome, emotional_weight FROM episodes WHERE session_id = $id", id=session_id
    )
    row["failures"] = db.rows(
        "SELECT ts, tool, error FROM errors WHERE session_id = $id ORDER BY ts LIMIT 200", id=session_id
    )
    # what the session taught about errors: the facts derived from its events
    row["fixes"] = db.rows(
        """
        WITH mine AS (
            SELECT event_id FROM tool_uses WHERE session_id = $id
            UNION SELECT event_id FROM errors WHERE session_id = $id
            UNION SELECT event_id FROM prompts WHERE session_id = $id
        )
        SELECT DISTINCT f.fact_id, f.relation, f.description
        FROM provenance p JOIN mine m ON m.event_id = p.caused_by JOIN facts f ON f.fact_id = p.subject
        WHERE f.relation IN ('solved_by', 'blocked_by', 'workaround_for') ORDER BY f.fact_id
        """,
        id=session_id,
    )
    row["mood"] = db.value(
        "SELECT avg(sentiment) FROM signals WHERE session_id = $id AND signal = 'mood'", id=session_id
    )
    row["events"] = db.rows(
        """
        SELECT id, kind, ts, source,
            left(coalesce(payload->>'prompt',
                          payload->>'tool_name' || ': ' || coalesce(payload->'tool_input'->>'command',
                              payload->'tool_input'->>'file_path', payload->'tool_input'->>'pattern',
                              payload->'tool_input'->>'description', payload->'tool_input'->>'url', ''),
                          payload->>'last_assistant_message', payload->>'message', payload->>'reason',
                          payload->>'query', payload->>'text', ''), 300) AS said
        FROM events WHERE session_id = $id ORDER BY ts, id
        """,
        id=session_id,
    )
    return row


def prompts(db: Projections, project: str | None, offset: int = 0, limit: int = PAGE) -> list[Row]:
    """Prompts, the newest first, each with what the hook gave it: the first recall recorded
    in its session after it and before the next prompt, each memory in the order given, with
    its text, its scores and why it passed the floor (recorded since reverie records why)."""
    found = db.rows(
        """
        WITH asked AS (
            SELECT event_id, session_id, project, ts, clean AS prompt,
                lead(ts) OVER (PARTITION BY session_id ORDER BY ts) AS next_ts
            FROM prompts WHERE agent = 'main' AND ($project IS NULL OR project = $project)
        ),
        page AS (SELECT * FROM asked ORDER BY ts DESC LIMIT $limit OFFSET $offset)
        SELECT p.event_id, p.session_id, p.project, p.ts, p.prompt,
            arg_min(r.results, r.ts) AS results, arg_min(r.given, r.ts)::VARCHAR AS given
        FROM page p
        LEFT JOIN retrievals r ON r.session_id = p.session_id AND r.ts >= p.ts
            AND (p.next_ts IS NULL OR r.ts < p.next_ts)
        GROUP BY ALL ORDER BY p.ts DESC
        """,
        project=project,
        limit=limit,
        offset=offset,
    )
    ids = sorted({m for row in found for m in row["results"] or []})
    texts = {
        r["memory_id"]: r
        for r in db.rows(
            "SELECT memory_id, kind, text FROM memory_texts WHERE memory_id IN (SELECT unnest($ids::VARCHAR[]))",
            ids=ids,
        )
    }
    for row in found:
        why = {g["memory_id"]: g for g in msgspec.json.decode(row.pop("given") or "[]")}
        row["given"] = [
            {"memory_id": m, **texts.get(m, {"kind": "?", "text": "(no longer in memory)"}), **why.get(m, {})}
            for m in row["results"] or []
        ]
    return found


def graph(
    db: Projections,
    project: str | None,
    at: datetime | None,
    around: str | None,
    known_now: bool = False,
    nodes: int = GRAPH_NODES,
) -> Row:
    """Entities and the facts between them, as believed at `at` (None: now; `known_now`: what
    was true at `at` as known now): the GRAPH_NODES most connected, or, `around` an entity, it
    and its neighbours. Each fact says whether it still holds now, or was superseded, ended or
    forgotten since."""
    known = "now()" if known_now else "$at"
    believed = f"SELECT * FROM facts_as_of($at, {known})" if at else "SELECT * FROM facts_current"
    edges = db.rows(
        f"""
        WITH f AS ({believed}),
        scoped AS (SELECT f.* FROM f WHERE {_IN_SCOPE} AND f.source IS NOT NULL AND f.target IS NOT NULL),
        degrees AS (
            SELECT e, count(*) AS degree FROM (SELECT source AS e FROM scoped UNION ALL SELECT target FROM scoped)
            GROUP BY e
        ),
        picked AS (
            SELECT e FROM degrees
            WHERE $around IS NULL OR e = $around
                OR e IN (SELECT target FROM scoped WHERE source = $around)
                OR e IN (SELECT source FROM scoped WHERE target = $around)
            ORDER BY degree DESC, e LIMIT $nodes
        )
        SELECT s.fact_id, s.source, s.target, s.relation, s.category, s.confidence, s.description,
            CASE WHEN now_.superseded_by IS NOT NULL THEN 'superseded'
                 WHEN now_.expired_at IS NOT NULL OR {_forgotten("now_")} THEN 'forgotten'
                 WHEN now_.invalid_at IS NOT NULL AND now_.invalid_at <= now() THEN 'ended'
                 ELSE 'holds' END AS now
        FROM scoped s JOIN facts now_ USING (fact_id)
        WHERE s.source IN (SELECT e FROM picked) AND s.target IN (SELECT e FROM picked)
        ORDER BY s.fact_id
        """,
        project=project,
        at=at,
        around=around,
        nodes=min(max(nodes, 1), MOST_NODES),
    )
    ids = sorted({e["source"] for e in edges} | {e["target"] for e in edges})
    found = db.rows(
        "SELECT entity_id AS id, name, type FROM entities WHERE entity_id IN (SELECT unnest($ids::VARCHAR[])) "
        "ORDER BY entity_id",
        ids=ids,
    )
    degree: dict[str, int] = {}
    for e in edges:
        degree[e["source"]] = degree.get(e["source"], 0) + 1
        degree[e["target"]] = degree.get(e["target"], 0) + 1
    places = _laid_out(ids, edges)
    for node in found:
        node["degree"] = degree.get(node["id"], 0)
        node["x"], node["y"] = places[node["id"]]
    return {"nodes": found, "edges": edges}


def _laid_out(ids: list[str], edges: list[Row]) -> dict[str, tuple[float, float]]:
    """Where each entity sits: a force-directed layout (networkx's Fruchterman-Reingold), the
    same for the same graph, in [-1, 1]."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(ids)
    graph.add_edges_from((e["source"], e["target"]) for e in edges)
    if not ids:
        return {}
    places = nx.spring_layout(graph, seed=7, iterations=60)
    return {node: (float(x), float(y)) for node, (x, y) in places.items()}


def time_span(db: Projections, project: str | None) -> Row:
    """The first moment a fact held or was learned, and the last one one changed (epoch
    seconds): the slider's span."""
    return db.rows(
        f"""
        SELECT epoch(least(min(f.valid_at), min(f.created_at)))::BIGINT AS first,
            epoch(greatest(max(f.created_at), max(f.valid_at), max(f.invalid_at), max(f.invalidated_at),
                           max(f.expired_at)))::BIGINT AS last
        FROM facts f WHERE {_IN_SCOPE}
        """,
        project=project,
    )[0]


def entity(db: Projections, entity_id: str, project: str | None) -> Row | None:
    """An entity, every fact about it (held or not), and its timeline."""
    found = db.rows(
        "SELECT entity_id, name, type, aliases, first_seen, last_seen, observations FROM entities "
        "WHERE entity_id = $id",
        id=entity_id,
    )
    if not found:
        return None
    row = found[0]
    row["facts"] = db.rows(
        f"""
        SELECT f.fact_id, s.name AS source, f.relation, t.name AS target, f.description, f.confidence,
            f.valid_at, f.invalid_at, f.created_at, f.superseded_by, f.expired_at,
            {current("f")} AND NOT {_forgotten("f")} AS holds
        FROM facts f LEFT JOIN entities s ON s.entity_id = f.source LEFT JOIN entities t ON t.entity_id = f.target
        WHERE $id IN (f.source, f.target) AND {_IN_SCOPE}
        ORDER BY holds DESC, f.created_at DESC
        """,
        id=entity_id,
        project=project,
    )
    row["timeline"] = db.rows(
        "SELECT happened_at, what, detail FROM entity_timeline WHERE entity_id = $id "
        "AND ($project IS NULL OR project IS NULL OR project = $project OR everywhere) "
        "ORDER BY happened_at NULLS LAST LIMIT 200",
        id=entity_id,
        project=project,
    )
    return row


def search_entities(db: Projections, text: str, limit: int = 20) -> list[Row]:
    """Entities whose name holds `text` (case aside), the most observed first."""
    return db.rows(
        "SELECT entity_id AS id, name, type FROM entities WHERE contains(lower(name), lower($q)) "
        "ORDER BY observations DESC NULLS LAST, name LIMIT $limit",
        q=text,
        limit=limit,
    )


def origin(db: Projections, memory_id: str) -> str | None:
    """The project a memory was made in (None: no memory has the id)."""
    found = db.value("SELECT origin FROM memory_texts WHERE memory_id = $id LIMIT 1", id=memory_id)
    return str(found) if found is not None else None


def health(db: Projections) -> Row:
    """memory_health's one row: HORA's quality metrics (projections/analytics.sql)."""
    found = db.rows("SELECT * EXCLUDE (memory_types) FROM memory_health")
    return found[0] if found else {}


def forgotten(db: Projections, project: str | None, limit: int = PAGE) -> list[Row]:
    """What was asked to be forgotten, the newest first, with why, by whom, and what it said."""
    return db.rows(
        """
        SELECT f.memory_id, f.ts, f.reason, f.source, f.project,
            coalesce(t.description, e.payload->>'text', e.payload->>'prompt') AS text
        FROM forgotten f
        LEFT JOIN facts t ON t.fact_id = f.memory_id
        LEFT JOIN events e ON e.id = f.memory_id
        WHERE $project IS NULL OR f.project = $project
        ORDER BY f.ts DESC LIMIT $limit
        """,
        project=project,
        limit=limit,
    )


def promotions(db: Projections, project: str | None) -> list[Row]:
    """How many facts entered each tier, day by day (tier flows)."""
    return db.rows(
        """
        SELECT date_trunc('day', since)::DATE AS day, tier, count(*) AS facts
        FROM memory_tiers WHERE $project IS NULL OR project = $project
        GROUP BY ALL ORDER BY day DESC, tier LIMIT 200
        """,
        project=project,
    )


def learned(db: Projections, project: str | None) -> Row:
    """Preferences, recurring failures, opinions, observations and communities, with their
    evidence; and, for a project, the memories that wait for the user's yes before CLAUDE.md's
    memory section (projections/curation.py)."""
    scoped = "$project IS NULL OR project = $project OR scope = 'global'"
    return {
        "waiting": db.read(lambda snapshot: section(snapshot, project).waiting) if project else [],
        "preferences": db.rows(
            f"SELECT preference_id, subject, statement, strength, evidence, crystallized_at, scope, "
            f"coalesce(pin.pinned, false) AS pinned FROM preferences LEFT JOIN preference_pins pin USING (preference_id) "
            f"WHERE {scoped} ORDER BY pinned DESC, strength DESC NULLS LAST LIMIT 200",
            project=project,
        ),
        "failures": db.rows(
            "SELECT failure_id, signature, occurrences, example, last_seen, project FROM failures "
            "WHERE $project IS NULL OR project = $project ORDER BY occurrences DESC, last_seen DESC LIMIT 200",
            project=project,
        ),
        "opinions": db.rows(
            "SELECT o.opinion_id, e.name AS subject, o.statement, o.confidence, o.formed_at, o.revisions "
            "FROM opinions o LEFT JOIN entities e ON e.entity_id = o.subject "
            "WHERE $project IS NULL OR o.project = $project OR o.scope = 'global' "
            "ORDER BY o.formed_at DESC LIMIT 200",
            project=project,
        ),
        "observations": db.rows(
            f"SELECT observation_id, statement, confidence, formed_at, coalesce(pro.promoted, false) AS promoted "
            f"FROM observations LEFT JOIN observation_promotions pro USING (observation_id) WHERE {scoped} "
            f"ORDER BY promoted DESC, formed_at DESC LIMIT 200",
            project=project,
        ),
        "communities": db.rows(
            """
            SELECT c.community_id, c.label, len(c.members) AS size, h.name AS hub, c.detected_at,
                list(e.name ORDER BY e.name)[1:12] AS members
            FROM communities c LEFT JOIN entities h ON h.entity_id = c.hub
            LEFT JOIN (SELECT community_id, unnest(members) AS entity_id FROM communities) m USING (community_id)
            LEFT JOIN entities e ON e.entity_id = m.entity_id
            WHERE len(c.members) > 0 AND ($project IS NULL OR c.project = $project)
            GROUP BY ALL ORDER BY size DESC LIMIT 100
            """,
            project=project,
        ),
    }


CURVE_POINTS = 200  # moments a memory's strength curve is read at


def strength(db: Projections, memory_id: str, now: datetime) -> Row | None:
    """How strongly a memory came to mind over time, as recall weighs it (its base-level ACT-R
    activation and FSRS retrievability: projections/recall/scoring.py) from when it was made to
    `now`, read at CURVE_POINTS moments, and each time it was recalled or used; None: no
    memory has the id."""
    from projections.recall import scoring

    # memory_texts hides what was forgotten: a forgotten fact or event is read from where it is kept
    found = db.rows(
        """
        SELECT * FROM (
            SELECT 1 AS rank, memory_id, kind, text, epoch(ts) AS made FROM memory_texts WHERE memory_id = $id
            UNION ALL
            SELECT 2, fact_id, 'fact', description, epoch(coalesce(valid_at, created_at)) FROM facts WHERE fact_id = $id
            UNION ALL
            SELECT 3, id, kind, coalesce(payload->>'text', payload->>'prompt', payload->>'last_assistant_message'),
                epoch(ts)
            FROM events WHERE id = $id
        ) ORDER BY rank LIMIT 1
        """,
        id=memory_id,
    )
    if not found:
        return None
    memory = {k: v for k, v in found[0].items() if k != "rank"}
    uses = db.rows(
        "SELECT epoch(activated_at) AS at, cause FROM activation_log WHERE memory_id = $id ORDER BY activated_at",
        id=memory_id,
    )
    made = [memory["made"]] if memory["made"] is not None else []
    moments = sorted([*made, *(u["at"] for u in uses if u["cause"] not in ("used", "failed"))])
    if not moments:
        return {**memory, "at": [], "activation": [], "retrievability": [], "uses": uses}
    failed = [u["at"] for u in uses if u["cause"] == "failed"]
    start, end = moments[0], max(now.timestamp(), moments[-1])
    times = [start + (end - start) * i / (CURVE_POINTS - 1) for i in range(CURVE_POINTS)]
    curve: dict[str, list[float | None]] = {"activation": [], "retrievability": []}
    for at in times:
        ages = [at - m for m in moments if m <= at]
        curve["activation"].append(round(scoring.base_level(ages), 4) if ages else None)
        stability = scoring.stability_days(ages, [at - f for f in failed if f <= at])
        curve["retrievability"].append(round(scoring.retrievability(min(ages) / scoring.DAY_S, stability), 4))
    return {**memory, "at": [round(t) for t in times], **curve, "uses": uses}
