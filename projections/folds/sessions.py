"""What happened in a session: its span, prompts, the assistant's last words, subagents, compactions;
whether it said it ended or went idle (workers/dynamics/idle.py).

A prompt is the user's own words: what Claude Code itself says in the user's turn (its
compaction request, a task notification, an interruption marker, a command's wrapping:
schemas/text/harness.py's HARNESS) is folded as its own kind, in `harness_messages`, so a replay moves
what earlier versions took for prompts."""

from projections.folds.base import DERIVED_SQL, ERROR
from schemas import kinds

TABLES = """
CREATE TABLE sessions (
    session_id VARCHAR PRIMARY KEY,
    project VARCHAR,
    started_at TIMESTAMPTZ,
    start_source VARCHAR,      -- startup, resume, clear, compact
    ended_at TIMESTAMPTZ,
    end_reason VARCHAR,
    cwd VARCHAR,                -- where the session began (the earliest event that named one)
    cwd_at TIMESTAMPTZ,
    transcript_path VARCHAR,
    first_event_at TIMESTAMPTZ,
    last_event_at TIMESTAMPTZ,
    events BIGINT,
    prompts BIGINT,
    tool_uses BIGINT,
    errors BIGINT,
    from_hooks BOOLEAN,         -- recorded by Claude Code's hooks as it happened (not imported)
    idled_at TIMESTAMPTZ        -- its last event when it was last taken for ended, idle (no SessionEnd)
);
-- clean: the text as memory (clean_text: Claude Code's wrappers and colour codes taken out),
-- kept by the fold: the view memory_texts reads every prompt and message after every fold, and
-- cleaning them there cost 160 ms at 100k prompts
CREATE TABLE prompts (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, agent VARCHAR,
    ts TIMESTAMPTZ, prompt VARCHAR, chars BIGINT, clean VARCHAR
);
CREATE TABLE harness_messages (  -- what Claude Code itself said in the user's turn, by kind
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, agent VARCHAR,
    ts TIMESTAMPTZ, kind VARCHAR, text VARCHAR
);
CREATE TABLE messages (         -- the assistant's last words of each turn
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, agent VARCHAR,
    ts TIMESTAMPTZ, text VARCHAR, clean VARCHAR
);
CREATE TABLE subagents (
    agent_id VARCHAR PRIMARY KEY, session_id VARCHAR, agent_type VARCHAR,
    started_at TIMESTAMPTZ, stopped_at TIMESTAMPTZ, last_message VARCHAR, transcript_path VARCHAR
);
CREATE TABLE compactions (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, ts TIMESTAMPTZ,
    phase VARCHAR,              -- started, finished
    trigger VARCHAR, instructions VARCHAR, summary VARCHAR
);
"""

FOLDS: list[tuple[str, str]] = [
    (
        "sessions",
        f"""
        INSERT INTO sessions
        SELECT session_id, min(project),
            min(ts) FILTER (kind = '{kinds.SESSION_STARTED}'),
            arg_min(payload->>'source', ts) FILTER (kind = '{kinds.SESSION_STARTED}'),
            max(ts) FILTER (kind = '{kinds.SESSION_ENDED}'),
            arg_max(payload->>'reason', ts) FILTER (kind = '{kinds.SESSION_ENDED}'),
            arg_min(payload->>'cwd', ts) FILTER (payload->>'cwd' IS NOT NULL),
            min(ts) FILTER (payload->>'cwd' IS NOT NULL),
            min(payload->>'transcript_path'),
            min(ts), max(ts), count(*),
            count(*) FILTER (kind = '{kinds.PROMPT_SUBMITTED}' AND harness_kind(payload->>'prompt') IS NULL),
            count(*) FILTER (kind IN ('{kinds.TOOL_USED}', '{kinds.TOOL_FAILED}')),
            count(*) FILTER (kind = '{kinds.TOOL_FAILED}' AND NOT cancelled({ERROR})),
            bool_or(source = '{kinds.SOURCE_CLAUDE_CODE}'), NULL
        FROM batch WHERE session_id IS NOT NULL AND kind NOT IN ({DERIVED_SQL})
            -- stashing a session is no step of it: one that ended would seem to go on (and go idle)
            AND kind <> '{kinds.SESSION_STASHED}'
        GROUP BY session_id
        ON CONFLICT (session_id) DO UPDATE SET
            project = least(sessions.project, excluded.project),
            start_source = CASE WHEN sessions.started_at IS NULL OR excluded.started_at < sessions.started_at
                THEN excluded.start_source ELSE sessions.start_source END,
            started_at = least(sessions.started_at, excluded.started_at),
            end_reason = CASE WHEN sessions.ended_at IS NULL OR excluded.ended_at > sessions.ended_at
                THEN excluded.end_reason ELSE sessions.end_reason END,
            ended_at = greatest(sessions.ended_at, excluded.ended_at),
            cwd = CASE WHEN sessions.cwd_at IS NULL OR excluded.cwd_at < sessions.cwd_at
                THEN excluded.cwd ELSE sessions.cwd END,
            cwd_at = least(sessions.cwd_at, excluded.cwd_at),
            transcript_path = least(sessions.transcript_path, excluded.transcript_path),
            first_event_at = least(sessions.first_event_at, excluded.first_event_at),
            last_event_at = greatest(sessions.last_event_at, excluded.last_event_at),
            events = sessions.events + excluded.events,
            prompts = sessions.prompts + excluded.prompts,
            tool_uses = sessions.tool_uses + excluded.tool_uses,
            errors = sessions.errors + excluded.errors,
            from_hooks = sessions.from_hooks OR excluded.from_hooks
        """,
    ),
    (
        "sessions_idled",
        f"""
        UPDATE sessions SET idled_at = greatest(sessions.idled_at, idled.last_event_at)
        FROM (SELECT payload->>'session_id' AS session_id,
                max(TRY_CAST(payload->>'last_event_at' AS TIMESTAMPTZ)) AS last_event_at
              FROM batch WHERE kind = '{kinds.SESSION_IDLED}' GROUP BY ALL) idled
        WHERE sessions.session_id = idled.session_id
        """,
    ),
    (
        "prompts",
        f"""
        INSERT INTO prompts
        SELECT id, session_id, project, agent, ts, payload->>'prompt', length(payload->>'prompt'),
            clean_text(payload->>'prompt')
        FROM batch WHERE kind = '{kinds.PROMPT_SUBMITTED}' AND harness_kind(payload->>'prompt') IS NULL
        """,
    ),
    (
        "harness_messages",
        f"""
        INSERT INTO harness_messages
        SELECT id, session_id, project, agent, ts, harness_kind(payload->>'prompt'), payload->>'prompt'
        FROM batch WHERE kind = '{kinds.PROMPT_SUBMITTED}' AND harness_kind(payload->>'prompt') IS NOT NULL
        """,
    ),
    (
        "messages",
        f"""
        INSERT INTO messages
        SELECT id, session_id, project, agent, ts, payload->>'last_assistant_message',
            clean_text(payload->>'last_assistant_message')
        FROM batch WHERE kind IN ('{kinds.ASSISTANT_STOPPED}', '{kinds.SUBAGENT_STOPPED}')
            AND payload->>'last_assistant_message' IS NOT NULL
        """,
    ),
    (
        "subagents",
        f"""
        INSERT INTO subagents
        SELECT agent, min(session_id), min(payload->>'agent_type'),
            min(ts) FILTER (kind = '{kinds.SUBAGENT_STARTED}'),
            max(ts) FILTER (kind = '{kinds.SUBAGENT_STOPPED}'),
            arg_max(payload->>'last_assistant_message', ts) FILTER (kind = '{kinds.SUBAGENT_STOPPED}'),
            min(payload->>'agent_transcript_path')
        FROM batch WHERE kind IN ('{kinds.SUBAGENT_STARTED}', '{kinds.SUBAGENT_STOPPED}') AND agent <> 'main'
        GROUP BY agent
        ON CONFLICT (agent_id) DO UPDATE SET
            session_id = least(subagents.session_id, excluded.session_id),
            agent_type = least(subagents.agent_type, excluded.agent_type),
            started_at = least(subagents.started_at, excluded.started_at),
            last_message = CASE WHEN subagents.stopped_at IS NULL OR excluded.stopped_at > subagents.stopped_at
                THEN excluded.last_message ELSE subagents.last_message END,
            stopped_at = greatest(subagents.stopped_at, excluded.stopped_at),
            transcript_path = least(subagents.transcript_path, excluded.transcript_path)
        """,
    ),
    (
        "compactions",
        f"""
        INSERT INTO compactions
        SELECT id, session_id, ts,
            CASE kind WHEN '{kinds.COMPACTION_STARTED}' THEN 'started' ELSE 'finished' END,
            payload->>'trigger', payload->>'custom_instructions', payload->>'compact_summary'
        FROM batch WHERE kind IN ('{kinds.COMPACTION_STARTED}', '{kinds.COMPACTION_FINISHED}')
        """,
    ),
]
