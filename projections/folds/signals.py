"""Signals read from behaviour, the preferences they crystallize into, and recurring failures."""

from projections.folds.base import latest, newest_choice
from schemas import kinds

TABLES = """
CREATE TABLE signals (
    signal_id VARCHAR PRIMARY KEY, event_id VARCHAR, session_id VARCHAR, ts TIMESTAMPTZ,
    signal VARCHAR, text VARCHAR, subject VARCHAR, sentiment DOUBLE
);  -- event_id: the newest event that detected it
CREATE TABLE preferences (
    preference_id VARCHAR PRIMARY KEY, subject VARCHAR, statement VARCHAR, strength DOUBLE,
    evidence BIGINT, crystallized_at TIMESTAMPTZ, updated_by VARCHAR, project VARCHAR, scope VARCHAR
);
CREATE TABLE preference_pins (  -- the user's: pinned preferences are told every new session first
    preference_id VARCHAR PRIMARY KEY, pinned BOOLEAN, ts TIMESTAMPTZ, source VARCHAR, updated_by VARCHAR
);
CREATE TABLE failures (
    failure_id VARCHAR PRIMARY KEY, signature VARCHAR, occurrences BIGINT, example VARCHAR,
    last_seen TIMESTAMPTZ, updated_by VARCHAR, project VARCHAR  -- where it recurs
);
"""

FOLDS: list[tuple[str, str]] = [
    (
        "signals",
        f"""
        INSERT INTO signals
        SELECT k, id, session_id, ts, payload->>'signal', payload->>'text', payload->>'subject',
            coalesce(TRY_CAST(payload->>'sentiment' AS DOUBLE), 0.0)
        FROM {latest(kinds.SIGNAL_DETECTED, "signal_id")}
        ON CONFLICT (signal_id) DO UPDATE SET event_id = excluded.event_id, session_id = excluded.session_id,
            ts = excluded.ts, signal = excluded.signal, text = excluded.text, subject = excluded.subject,
            sentiment = excluded.sentiment
        WHERE excluded.event_id > signals.event_id
        """,
    ),
    (
        "preferences",
        f"""
        INSERT INTO preferences
        SELECT k, payload->>'subject', payload->>'statement', TRY_CAST(payload->>'strength' AS DOUBLE),
            TRY_CAST(payload->>'evidence' AS BIGINT), ts, id, project, coalesce(payload->>'scope', 'project')
        FROM {latest(kinds.PREFERENCE_CRYSTALLIZED, "preference_id")}
        ON CONFLICT (preference_id) DO UPDATE SET
            subject = excluded.subject, statement = excluded.statement, strength = excluded.strength,
            evidence = excluded.evidence, crystallized_at = excluded.crystallized_at, updated_by = excluded.updated_by,
            project = excluded.project, scope = excluded.scope
        WHERE excluded.updated_by > preferences.updated_by
        """,
    ),
    ("preference_pins", newest_choice("preference_pins", kinds.PREFERENCE_PINNED, "preference_id", "pinned")),
    (
        "failures",
        f"""
        INSERT INTO failures
        SELECT k, payload->>'signature', TRY_CAST(payload->>'occurrences' AS BIGINT), payload->>'example',
            TRY_CAST(payload->>'last_seen' AS TIMESTAMPTZ), id, project
        FROM {latest(kinds.FAILURE_RECURRING, "failure_id")}
        ON CONFLICT (failure_id) DO UPDATE SET
            signature = excluded.signature, occurrences = excluded.occurrences, example = excluded.example,
            last_seen = excluded.last_seen, updated_by = excluded.updated_by, project = excluded.project
        WHERE excluded.updated_by > failures.updated_by
        """,
    ),
]
