"""What every family of folds shares: the bookkeeping tables, `project_root`, the batch every
fold reads (each event under its project), provenance, and the helpers the folds are written
with."""

from projections.literals import string_literal
from schemas import kinds
from schemas.registry import DERIVED_KINDS, SUBJECTS
from schemas.text import harness

DERIVED_SQL = ", ".join(f"'{k}'" for k in sorted(DERIVED_KINDS))
# what a derived event is about: the payload field its kind names as its subject (schemas/registry.py)
SUBJECT_SQL = f"coalesce({', '.join(f'payload->>{string_literal(field)}' for field in SUBJECTS)})"


def latest(kind: str, key: str, newest: str = "id DESC") -> str:
    """The `batch` rows of `kind`, the newest per payload field `key` (by id, or the ORDER BY
    `newest` gives), with that key as `k`."""
    return (
        f"(SELECT *, payload->>'{key}' AS k FROM batch WHERE kind = '{kind}' "
        f"QUALIFY row_number() OVER (PARTITION BY payload->>'{key}' ORDER BY {newest}) = 1)"
    )


def newest_choice(table: str, kind: str, key: str, flag: str) -> str:
    """SQL that folds the user's newest choice of each `key` (an event of `kind` whose boolean
    `flag` says yes or no, yes when absent) into `table` (`key`, `flag`, ts, source, updated_by)."""
    return f"""
        INSERT INTO {table}
        SELECT k, coalesce(TRY_CAST(payload->>'{flag}' AS BOOLEAN), true), ts, source, id
        FROM {latest(kind, key)}
        ON CONFLICT ({key}) DO UPDATE SET
            {flag} = excluded.{flag}, ts = excluded.ts, source = excluded.source, updated_by = excluded.updated_by
        WHERE excluded.updated_by > {table}.updated_by
        """


# a failed tool's answer, as text
ERROR = "coalesce(payload->>'error', (payload->'error')::VARCHAR, '')"


def json_list(field: str) -> str:
    """The payload's list `field` as VARCHAR[] (empty when absent or not a list)."""
    return f"coalesce(TRY_CAST(payload->'{field}' AS VARCHAR[]), [])"


def _cases(column: str, patterns: tuple[tuple[str, str], ...]) -> str:
    return " ".join(
        f"WHEN regexp_matches({column}, {string_literal(pattern)}) THEN {string_literal(kind)}"
        for kind, pattern in patterns
    )


# What is someone's own words, and what is Claude Code's: schemas/text/harness.py's patterns, in SQL, for the
# folds (the store's own macros) and for readers (projections/sql.py makes them in its connection).
TEXT_MACROS = f"""
CREATE MACRO clean_text(t) AS trim(regexp_replace(regexp_replace(t, {string_literal(harness.WRAPPED)}, '', 'g'),
    {string_literal(harness.ANSI)}, '', 'g'), chr(32) || chr(9) || chr(13) || chr(10));
CREATE MACRO harness_kind(t) AS CASE WHEN clean_text(t) = ''
    THEN CASE {_cases("t", harness.WRAPPED_ONLY)} ELSE 'wrapped' END
    ELSE CASE {_cases("clean_text(t)", harness.HARNESS)} END END;
CREATE MACRO is_noise_clean(c) AS coalesce(c = '' OR regexp_matches(c, {string_literal(harness.ANY_HARNESS)}), false);
CREATE MACRO is_noise(t) AS is_noise_clean(clean_text(t));
CREATE MACRO cancelled(t) AS regexp_matches(left(clean_text(t), 1000), {string_literal(harness.CANCELLED)});
CREATE MACRO summary_of(t) AS CASE WHEN regexp_matches(t, {string_literal(harness.SUMMARY)})
    THEN regexp_extract(t, {string_literal(harness.SUMMARY)}, 1) END;
"""


TABLES = (
    TEXT_MACROS
    + r"""
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
-- An event's project as its root's path (ingest/project.py). Events recorded before projects
-- were paths name Claude Code's key (-home-u-proj-x, which proj.x and proj-x share): the key
-- is read back to the folder of the event's cwd whose key it is, else kept.
CREATE MACRO project_root(project, cwd) AS CASE
    WHEN cwd IS NULL OR regexp_matches(project, '[/\\]') OR length(cwd) > 4096 THEN project
    ELSE coalesce(rtrim(list_filter(
        list_transform(
            range(1, length(cwd) + 2),
            lambda i: CASE WHEN i > length(cwd) OR cwd[i] IN ('/', '\') THEN cwd[1:i - 1] END
        ),
        lambda p: p <> '' AND regexp_replace(rtrim(p, '/\'), '[^A-Za-z0-9]', '-', 'g') = project
    )[-1], '/\'), project)
END;
-- Which project each root path belongs to (ingest/project.py): the newest `project.identified`
-- of the root, by id. What was recorded under the root folds under that project.
CREATE TABLE project_roots (root VARCHAR PRIMARY KEY, project VARCHAR, identified_by VARCHAR);
-- What each project recorded in the log (read back to a path) was folded as: when a newer
-- identification says otherwise, what was folded before is in the wrong project, and the store
-- is rebuilt (meta 'projects_moved', projections/projector.py); replay knows every
-- identification before it folds anything.
CREATE TABLE recorded_projects (recorded VARCHAR PRIMARY KEY, project VARCHAR);
-- what has been folded: every event once (its kind, and where it came from: what trusts a memory
-- reads its causes' here), and the segments already read
CREATE TABLE folded (id VARCHAR PRIMARY KEY, kind VARCHAR, source VARCHAR);
CREATE TABLE folded_segments (name VARCHAR PRIMARY KEY);
CREATE TABLE provenance (        -- which observed events each derived event came from
    event_id VARCHAR, kind VARCHAR, subject VARCHAR, caused_by VARCHAR,
    PRIMARY KEY (event_id, caused_by)
);
"""
)

# The batch every fold reads: the events not folded yet, once each, in id order, under the
# project they were recorded under, read back to a path where it is Claude Code's key
# (project_root) by the event's cwd, else by where its session began. The statements after it
# move each to its project.
BATCH = """
CREATE OR REPLACE TEMP TABLE batch AS
WITH fresh AS (
    SELECT * REPLACE (payload::JSON AS payload) FROM segment_rows
    WHERE id NOT IN (SELECT id FROM folded)
    QUALIFY row_number() OVER (PARTITION BY id) = 1
), began AS (
    SELECT session_id, arg_min(payload->>'cwd', id) FILTER (WHERE payload->>'cwd' IS NOT NULL) AS cwd
    FROM fresh GROUP BY ALL
)
SELECT fresh.* REPLACE (
    project_root(project_root(fresh.project, fresh.payload->>'cwd'), coalesce(sessions.cwd, began.cwd))
    AS project
)
FROM fresh LEFT JOIN began USING (session_id) LEFT JOIN sessions USING (session_id)
ORDER BY id
"""
# The identifications among them, before anything moves: the newest of a root holds.
IDENTIFY = f"""
INSERT INTO project_roots
SELECT payload->>'root', arg_max(payload->>'project', id), max(id)
FROM batch WHERE kind = '{kinds.PROJECT_IDENTIFIED}'
    AND payload->>'root' IS NOT NULL AND payload->>'project' IS NOT NULL
GROUP BY 1
ON CONFLICT (root) DO UPDATE SET
    project = CASE WHEN excluded.identified_by > project_roots.identified_by
        THEN excluded.project ELSE project_roots.project END,
    identified_by = greatest(project_roots.identified_by, excluded.identified_by)
"""
# Whether an identification moved a recorded project folded before (then the store is rebuilt).
MOVED = """
INSERT OR REPLACE INTO meta
SELECT 'projects_moved', string_agg(recorded || ' -> ' || project_roots.project, ', ' ORDER BY recorded)
FROM recorded_projects JOIN project_roots ON root = recorded
WHERE recorded_projects.project <> project_roots.project
HAVING count(*) > 0
"""
RECORDED = """
INSERT INTO recorded_projects
SELECT DISTINCT batch.project, coalesce(project_roots.project, batch.project)
FROM batch LEFT JOIN project_roots ON root = batch.project
WHERE batch.project IS NOT NULL
ON CONFLICT DO NOTHING
"""
# Each event under its project: its session's (the project the session was first folded under,
# else that of its earliest event in the batch: a session stays in the project it began in,
# wherever the agent went), else the project its recorded one is identified as, else that one.
MOVE = f"""
UPDATE batch SET project = moved.project
FROM (
    WITH identified AS (
        SELECT id, session_id, kind, coalesce(project_roots.project, batch.project) AS project
        FROM batch LEFT JOIN project_roots ON root = batch.project
    ), began AS (
        SELECT session_id, arg_min(project, id) AS project FROM identified
        WHERE session_id IS NOT NULL AND kind NOT IN ({DERIVED_SQL})
        GROUP BY ALL
    )
    SELECT identified.id, coalesce(sessions.project, began.project, identified.project) AS project
    FROM identified LEFT JOIN began USING (session_id) LEFT JOIN sessions USING (session_id)
) moved
WHERE batch.id = moved.id AND batch.project IS DISTINCT FROM moved.project
"""
# in the order the projector runs them, before FOLDS (and hashed into the schema version with them)
MAPPING = [BATCH, IDENTIFY, MOVED, RECORDED, MOVE]

FOLDS: list[tuple[str, str]] = [
    (
        "provenance",
        f"""
        INSERT INTO provenance
        SELECT DISTINCT id, kind, {SUBJECT_SQL}, unnest(caused_by)
        FROM batch WHERE kind IN ({DERIVED_SQL})
        """,
    ),
]
