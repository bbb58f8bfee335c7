"""The tools a session used: each request, use and failure, and how long each took. A call that
never ran (Claude Code cancelled it, the user refused or interrupted it) is no error.

How long a call took is what Claude Code says in its PostToolUse (`duration_ms`: 2.1.328 sends
it); for an older Claude Code, the time from the call's PreToolUse, when one was recorded."""

from projections.folds.base import ERROR
from schemas import kinds


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
"""

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
]
