"""The tools a session used: each request, use and failure, and how long each took. A call that
never ran (Claude Code cancelled it, the user refused or interrupted it) is no error.

How long a call took is what Claude Code says in its PostToolUse (`duration_ms`: 2.1.328 sends
it); for an older Claude Code, the time from the call's PreToolUse, when one was recorded."""

from typing import Any

import msgspec

from projections.folds.base import ERROR
from schemas import kinds
from schemas.text import passages
from schemas.text.passages import said_passages, tool_passages


def _summary_of_input() -> str:
    """What a tool was asked to do, in one line: the command, the file, the pattern, or the JSON."""
    return (
        "left(coalesce(payload->>'$.tool_input.command', payload->>'$.tool_input.file_path', "
        "payload->>'$.tool_input.notebook_path', payload->>'$.tool_input.pattern', "
        "payload->>'$.tool_input.url', payload->>'$.tool_input.query', "
        "(payload->'tool_input')::VARCHAR), 300)"
    )


TABLES = """
CREATE TABLE tool_requests (tool_use_id VARCHAR PRIMARY KEY, event_id VARCHAR, ts TIMESTAMPTZ);
CREATE TABLE tool_uses (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, agent VARCHAR,
    ts TIMESTAMPTZ, tool_use_id VARCHAR, tool VARCHAR,
    input_summary VARCHAR,      -- the command, the file or the pattern; else the input's start
    outcome VARCHAR,            -- ok, error, cancelled (it never ran: cancelled, refused, interrupted)
    duration_ms DOUBLE,         -- Claude Code's, else from the PreToolUse of the same tool_use_id
    files_touched VARCHAR[]
);
CREATE TABLE errors (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, ts TIMESTAMPTZ,
    tool VARCHAR, error VARCHAR
);
-- what the session showed and said, as passages (schemas/text/passages.py): each once, however
-- often it was shown; a whole file's passages carry its key, and its newest version is current
CREATE TABLE passages (
    passage_id VARCHAR PRIMARY KEY,  -- of its project and text: the same content shown again is this
    project VARCHAR, session_id VARCHAR, agent VARCHAR,
    event_id VARCHAR,           -- the first event that showed it
    ts TIMESTAMPTZ,             -- first shown
    seen_last TIMESTAMPTZ,      -- last shown
    times_seen BIGINT,
    action VARCHAR,             -- read, wrote, edited, ran, searched, fetched, answered, reported, said, used
    source VARCHAR,             -- the path, command, pattern or address
    key VARCHAR,                -- 'file:<path>' for a whole file's text, 'edit:<path>' for an edit's
    version VARCHAR,            -- a digest of everything that use showed of its source
    part INTEGER,
    text VARCHAR                -- its heading line, then its text
);
CREATE TABLE file_versions (    -- each version of each file seen whole, and when it was last seen
    project VARCHAR, key VARCHAR, version VARCHAR, seen_last TIMESTAMPTZ,
    PRIMARY KEY (project, key, version)
);
"""

# the fields of a passage, as the fold's function returns them
PASSAGE_TYPE = (
    "STRUCT(action VARCHAR, source VARCHAR, key VARCHAR, version VARCHAR, part INTEGER, text VARCHAR)[]"
)


def event_passages(kind: str, payload: str) -> list[dict[str, Any]]:
    """The passages an event's payload (JSON) shows: the fold's function (projections/store.py
    gives it to the writer's connection)."""
    try:
        decoded = msgspec.json.decode(payload)
    except msgspec.DecodeError:
        return []
    if not isinstance(decoded, dict):
        return []
    if kind == kinds.ASSISTANT_SAID:
        text = decoded.get("text")
        found = said_passages(text) if isinstance(text, str) else []
    else:
        found = tool_passages(decoded, failed=kind == kinds.TOOL_FAILED)
    return [msgspec.structs.asdict(p) for p in found]


# the functions folds call, by name: (the function, its parameters' types, its result's type)
FUNCTIONS = {"event_passages": (event_passages, ["VARCHAR", "VARCHAR"], PASSAGE_TYPE)}
FUNCTION_MODULES = (passages,)

FOLDS: list[tuple[str, str]] = [
    (
        "tool_requests",
        f"""
        INSERT INTO tool_requests
        SELECT payload->>'tool_use_id', min(id), min(ts)
        FROM batch WHERE kind = '{kinds.TOOL_REQUESTED}' AND payload->>'tool_use_id' IS NOT NULL
        GROUP BY payload->>'tool_use_id'
        ON CONFLICT (tool_use_id) DO UPDATE SET
            event_id = least(tool_requests.event_id, excluded.event_id),
            ts = least(tool_requests.ts, excluded.ts)
        """,
    ),
    (
        "tool_uses",
        f"""
        INSERT INTO tool_uses
        SELECT b.id, b.session_id, b.project, b.agent, b.ts, b.payload->>'tool_use_id', b.payload->>'tool_name',
            {_summary_of_input().replace("payload", "b.payload")},
            CASE WHEN b.kind <> '{kinds.TOOL_FAILED}' THEN 'ok' WHEN cancelled({ERROR.replace("payload", "b.payload")}) THEN 'cancelled'
                ELSE 'error' END,
            coalesce(TRY_CAST(b.payload->>'duration_ms' AS DOUBLE), epoch_ms(b.ts) - epoch_ms(r.ts)),
            list_filter([b.payload->>'$.tool_input.file_path', b.payload->>'$.tool_input.notebook_path',
                         b.payload->>'$.tool_input.path'], lambda p: p IS NOT NULL)
        FROM batch b LEFT JOIN tool_requests r ON r.tool_use_id = b.payload->>'tool_use_id'
        WHERE b.kind IN ('{kinds.TOOL_USED}', '{kinds.TOOL_FAILED}')
        """,
    ),
    (
        "tool_durations",  # a PreToolUse folded after its PostToolUse still gives the duration
        """
        UPDATE tool_uses SET duration_ms = epoch_ms(tool_uses.ts) - epoch_ms(r.ts)
        FROM tool_requests r
        WHERE r.tool_use_id = tool_uses.tool_use_id AND tool_uses.duration_ms IS NULL
        """,
    ),
    (
        "errors",
        f"""
        INSERT INTO errors
        SELECT id, session_id, project, ts, payload->>'tool_name', left({ERROR}, 4000)
        FROM batch WHERE kind = '{kinds.TOOL_FAILED}' AND NOT cancelled({ERROR})
        """,
    ),
    (
        "passages",
        f"""
        INSERT INTO passages
        WITH shown AS (
            SELECT id, ts, project, session_id, agent, unnest(event_passages(kind, payload::VARCHAR)) AS p
            FROM batch
            WHERE kind IN ('{kinds.TOOL_USED}', '{kinds.ASSISTANT_SAID}')
                OR (kind = '{kinds.TOOL_FAILED}' AND NOT cancelled({ERROR}))
        )
        SELECT substr(sha256(concat_ws(chr(31), project, p.text)), 1, 26) AS passage_id,
            any_value(project), arg_min(session_id, id), arg_min(agent, id), min(id), min(ts), max(ts),
            count(*), arg_min(p.action, id), arg_min(p.source, id), arg_min(p.key, id), arg_min(p.version, id),
            arg_min(p.part, id), any_value(p.text)
        FROM shown GROUP BY passage_id
        ON CONFLICT (passage_id) DO UPDATE SET
            session_id = CASE WHEN excluded.event_id < passages.event_id THEN excluded.session_id ELSE passages.session_id END,
            agent = CASE WHEN excluded.event_id < passages.event_id THEN excluded.agent ELSE passages.agent END,
            event_id = least(passages.event_id, excluded.event_id),
            ts = least(passages.ts, excluded.ts),
            seen_last = greatest(passages.seen_last, excluded.seen_last),
            times_seen = passages.times_seen + excluded.times_seen
        """,
    ),
    (
        "file_versions",
        f"""
        INSERT INTO file_versions
        SELECT project, p.key, p.version, max(ts)
        FROM (SELECT ts, project, unnest(event_passages(kind, payload::VARCHAR)) AS p
              FROM batch WHERE kind = '{kinds.TOOL_USED}' AND payload->>'tool_name' IN ('Read', 'Write', 'NotebookRead'))
        WHERE p.key LIKE 'file:%' AND p.part = 0
        GROUP BY ALL
        ON CONFLICT (project, key, version) DO UPDATE SET seen_last = greatest(file_versions.seen_last, excluded.seen_last)
        """,
    ),
]
