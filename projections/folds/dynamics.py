"""The dynamics of memory: recalls and every use of a memory (activation), what was asked to be
forgotten (and what another memory superseded), tiers, communities."""

from projections.folds.base import json_list, latest
from schemas import kinds

TABLES = """
CREATE TABLE retrievals (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, ts TIMESTAMPTZ,
    query VARCHAR, results VARCHAR[], scores DOUBLE[],
    given JSON  -- the hook's: why each memory was given (schemas/recall.py Given)
);
-- activation.recorded events: a memory's uses (a recall shows memories; what the agent then did
-- with them is judged, workers/dynamics/decay.py, and only a use strengthens)
CREATE TABLE activation_log (
    event_id VARCHAR, memory_id VARCHAR, activated_at TIMESTAMPTZ, cause VARCHAR, weight DOUBLE,
    PRIMARY KEY (event_id, memory_id)
);
CREATE TABLE forgotten (       -- hidden from recall where it was asked, or superseded; the memory is kept
    event_id VARCHAR PRIMARY KEY, memory_id VARCHAR, ts TIMESTAMPTZ, reason VARCHAR, source VARCHAR,
    project VARCHAR
);
CREATE TABLE tiers (memory_id VARCHAR PRIMARY KEY, tier VARCHAR, since TIMESTAMPTZ, updated_by VARCHAR);
-- no members: dissolved, as the last detection found. The last is the last recorded: a
-- dissolution's id can sort before the detection it undoes (both are of its time).
CREATE TABLE communities (
    community_id VARCHAR PRIMARY KEY, members VARCHAR[], label VARCHAR, detected_at TIMESTAMPTZ,
    updated_by VARCHAR, hub VARCHAR, facts VARCHAR[], project VARCHAR, recorded_at TIMESTAMPTZ
);
"""

FOLDS: list[tuple[str, str]] = [
    (
        "retrievals",
        f"""
        INSERT INTO retrievals
        SELECT id, session_id, project, ts, payload->>'query', {json_list("results")},
            coalesce(TRY_CAST(payload->'scores' AS DOUBLE[]), []), payload->'given'
        FROM batch WHERE kind = '{kinds.MEMORY_RETRIEVED}'
        """,
    ),
    (
        "activation_log",
        f"""
        INSERT INTO activation_log
        SELECT id, payload->>'memory_id', coalesce(TRY_CAST(payload->>'at' AS TIMESTAMPTZ), ts),
            coalesce(payload->>'cause', 'retrieved'), coalesce(TRY_CAST(payload->>'weight' AS DOUBLE), 1.0)
        FROM batch WHERE kind = '{kinds.ACTIVATION_RECORDED}'
        """,
    ),
    (
        "forgotten",
        f"""
        INSERT INTO forgotten SELECT id, payload->>'memory_id', ts, payload->>'reason', source, project
        FROM batch WHERE kind = '{kinds.MEMORY_FORGOTTEN}'
        UNION ALL  -- a fact the user corrected is forgotten as they say so
        SELECT id, payload->>'fact_id', ts, 'corrected: ' || coalesce(payload->>'text', ''), source, project
        FROM batch WHERE kind = '{kinds.FACT_CORRECTED}'
        UNION ALL  -- a memory another replaces (an update of what was remembered): hidden as well
        SELECT id, payload->>'memory_id', ts,
            'superseded by ' || (payload->>'by_memory_id') || coalesce(': ' || nullif(payload->>'reason', ''), ''),
            source, project
        FROM batch WHERE kind = '{kinds.MEMORY_SUPERSEDED}'
        """,
    ),
    (
        "tiers",
        f"""
        INSERT INTO tiers SELECT k, payload->>'to_tier', ts, id FROM {latest(kinds.TIER_PROMOTED, "memory_id")}
        ON CONFLICT (memory_id) DO UPDATE SET tier = excluded.tier, since = excluded.since,
            updated_by = excluded.updated_by
        WHERE excluded.updated_by > tiers.updated_by
        """,
    ),
    (
        "communities",
        f"""
        INSERT INTO communities
        SELECT k, list_sort({json_list("members")}), coalesce(payload->>'label', ''), ts, id,
            payload->>'hub', list_sort({json_list("facts")}), project, recorded_at
        FROM {latest(kinds.COMMUNITY_DETECTED, "community_id", newest="recorded_at DESC, id DESC")}
        ON CONFLICT (community_id) DO UPDATE SET members = excluded.members, label = excluded.label,
            detected_at = excluded.detected_at, updated_by = excluded.updated_by, hub = excluded.hub,
            facts = excluded.facts, project = excluded.project, recorded_at = excluded.recorded_at
        WHERE excluded.recorded_at > communities.recorded_at
            OR (excluded.recorded_at = communities.recorded_at AND excluded.updated_by > communities.updated_by)
        """,
    ),
]
