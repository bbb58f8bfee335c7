"""Episodes: what a session went through, the episodes a dream cycle merged, and where a session
stood when the user stashed it."""

from projections.folds.base import json_list, latest
from schemas import kinds

TABLES = """
CREATE TABLE episodes (
    episode_id VARCHAR PRIMARY KEY, session_id VARCHAR, title VARCHAR, summary VARCHAR,
    started_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, outcome VARCHAR, entities VARCHAR[],
    emotional_weight DOUBLE, consolidated_into VARCHAR, recorded_at TIMESTAMPTZ, updated_by VARCHAR,
    project VARCHAR
);
CREATE TABLE stashes (  -- where a session stood, kept by name (`reverie stash`): the newest of a name holds
    event_id VARCHAR PRIMARY KEY, name VARCHAR, project VARCHAR, session_id VARCHAR, ts TIMESTAMPTZ,
    goal VARCHAR, decisions VARCHAR[], open_threads VARCHAR[], next_steps VARCHAR[], files VARCHAR[],
    worded_by VARCHAR
);
"""

FOLDS: list[tuple[str, str]] = [
    (
        "stashes",
        f"""
        INSERT INTO stashes
        SELECT id, payload->>'name', project, coalesce(payload->>'session_id', session_id), ts, payload->>'goal',
            {json_list("decisions")}, {json_list("open_threads")}, {json_list("next_steps")}, {json_list("files")},
            payload->>'worded_by'
        FROM batch WHERE kind = '{kinds.SESSION_STASHED}'
        ON CONFLICT DO NOTHING
        """,
    ),
    (
        "episodes",
        f"""
        INSERT INTO episodes
        SELECT k, payload->>'session_id', payload->>'title', payload->>'summary',
            TRY_CAST(payload->>'started_at' AS TIMESTAMPTZ), TRY_CAST(payload->>'ended_at' AS TIMESTAMPTZ),
            coalesce(payload->>'outcome', 'unknown'), {json_list("entities")},
            coalesce(TRY_CAST(payload->>'emotional_weight' AS DOUBLE), 1.0), NULL, recorded_at, id, project
        FROM {latest(kinds.EPISODE_RECORDED, "episode_id")}
        ON CONFLICT (episode_id) DO UPDATE SET
            session_id = excluded.session_id, title = excluded.title, summary = excluded.summary,
            started_at = excluded.started_at, ended_at = excluded.ended_at, outcome = excluded.outcome,
            entities = excluded.entities, emotional_weight = excluded.emotional_weight,
            recorded_at = excluded.recorded_at, updated_by = excluded.updated_by, project = excluded.project
        WHERE excluded.updated_by > episodes.updated_by
        """,
    ),
    (
        "episodes_consolidated",
        f"""
        INSERT INTO episodes
        SELECT k, NULL, payload->>'title', payload->>'summary',
            (SELECT min(started_at) FROM episodes WHERE list_contains({json_list("from_episodes")}, episode_id)),
            (SELECT max(coalesce(ended_at, started_at)) FROM episodes
             WHERE list_contains({json_list("from_episodes")}, episode_id)),
            'unknown', [], 1.0, NULL, recorded_at, id, project
        FROM {latest(kinds.EPISODE_CONSOLIDATED, "episode_id")}
        ON CONFLICT (episode_id) DO UPDATE SET
            title = excluded.title, summary = excluded.summary, started_at = excluded.started_at,
            ended_at = excluded.ended_at, recorded_at = excluded.recorded_at, updated_by = excluded.updated_by,
            project = excluded.project
        WHERE excluded.updated_by > episodes.updated_by
        """,
    ),
    (
        "episodes_merged",
        f"""
        UPDATE episodes SET consolidated_into = c.k
        FROM (SELECT k, unnest({json_list("from_episodes")}) AS source
              FROM {latest(kinds.EPISODE_CONSOLIDATED, "episode_id")}) c
        WHERE c.source = episodes.episode_id
            AND (episodes.consolidated_into IS NULL OR c.k > episodes.consolidated_into)
        """,
    ),
]
