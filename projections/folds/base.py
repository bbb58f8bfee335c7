"""What every family of folds shares: the bookkeeping tables, `project_root`, provenance, and
the helpers the folds are written with."""

from projections.literals import string_literal
from schemas import text
from schemas.registry import DERIVED_KINDS

DERIVED_SQL = ", ".join(f"'{k}'" for k in sorted(DERIVED_KINDS))


def latest(kind: str, key: str, newest: str = "id DESC") -> str:
    """The `batch` rows of `kind`, the newest per payload field `key` (by id, or the ORDER BY
    `newest` gives), with that key as `k`."""
    return (
        f"(SELECT *, payload->>'{key}' AS k FROM batch WHERE kind = '{kind}' "
        f"QUALIFY row_number() OVER (PARTITION BY payload->>'{key}' ORDER BY {newest}) = 1)"
    )


def json_list(field: str) -> str:
    """The payload's list `field` as VARCHAR[] (empty when absent or not a list)."""
    return f"coalesce(TRY_CAST(payload->'{field}' AS VARCHAR[]), [])"


def _cases(column: str, patterns: tuple[tuple[str, str], ...]) -> str:
    return " ".join(
        f"WHEN regexp_matches({column}, {string_literal(pattern)}) THEN {string_literal(kind)}"
        for kind, pattern in patterns
    )


# What is someone's own words, and what is Claude Code's: schemas/text.py's patterns, in SQL, for the
# folds (the store's own macros) and for readers (projections/sql.py makes them in its connection).
TEXT_MACROS = f"""
CREATE MACRO clean_text(t) AS trim(regexp_replace(regexp_replace(t, {string_literal(text.WRAPPED)}, '', 'g'),
    {string_literal(text.ANSI)}, '', 'g'), chr(32) || chr(9) || chr(13) || chr(10));
CREATE MACRO harness_kind(t) AS CASE WHEN clean_text(t) = ''
    THEN CASE {_cases("t", text.WRAPPED_ONLY)} ELSE 'wrapped' END
    ELSE CASE {_cases("clean_text(t)", text.HARNESS)} END END;
CREATE MACRO is_noise(t) AS harness_kind(t) IS NOT NULL;
CREATE MACRO cancelled(t) AS regexp_matches(left(t, 1000), {string_literal(text.CANCELLED)});
CREATE MACRO summary_of(t) AS CASE WHEN regexp_matches(t, {string_literal(text.SUMMARY)})
    THEN regexp_extract(t, {string_literal(text.SUMMARY)}, 1) END;
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
-- what has been folded: every event once, and the segments already read
CREATE TABLE folded (id VARCHAR PRIMARY KEY);
CREATE TABLE folded_segments (name VARCHAR PRIMARY KEY);
CREATE TABLE provenance (        -- which observed events each derived event came from
    event_id VARCHAR, kind VARCHAR, subject VARCHAR, caused_by VARCHAR,
    PRIMARY KEY (event_id, caused_by)
);
"""
)

FOLDS: list[tuple[str, str]] = [
    (
        "provenance",
        f"""
        INSERT INTO provenance
        SELECT DISTINCT id, kind, coalesce(payload->>'fact_id', payload->>'entity_id', payload->>'episode_id',
            payload->>'signal_id', payload->>'preference_id', payload->>'failure_id', payload->>'memory_id',
            payload->>'community_id', payload->>'opinion_id', payload->>'observation_id'), unnest(caused_by)
        FROM batch WHERE kind IN ({DERIVED_SQL})
        """,
    ),
]
