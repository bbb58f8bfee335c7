-- The projections: tables folded from the event log by projections/folds.py.
-- The schema version (projections/store.py) is a hash of this file and of the folds: change
-- either, and a store of the old version is rebuilt from the log.

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

-- observed: what happened in the sessions
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
    errors BIGINT
);
CREATE TABLE prompts (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, agent VARCHAR,
    ts TIMESTAMPTZ, prompt VARCHAR, chars BIGINT
);
CREATE TABLE tool_requests (tool_use_id VARCHAR PRIMARY KEY, event_id VARCHAR, ts TIMESTAMPTZ);
CREATE TABLE tool_uses (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, agent VARCHAR,
    ts TIMESTAMPTZ, tool_use_id VARCHAR, tool VARCHAR,
    input_summary VARCHAR,      -- the command, the file or the pattern; else the input's start
    outcome VARCHAR,            -- ok, error
    duration_ms DOUBLE,         -- from the PreToolUse of the same tool_use_id, when recorded
    files_touched VARCHAR[]
);
CREATE TABLE errors (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, ts TIMESTAMPTZ,
    tool VARCHAR, error VARCHAR
);
CREATE TABLE messages (         -- the assistant's last words of each turn
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, agent VARCHAR,
    ts TIMESTAMPTZ, text VARCHAR
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
CREATE TABLE remembered (event_id VARCHAR PRIMARY KEY, project VARCHAR, ts TIMESTAMPTZ, text VARCHAR, tags VARCHAR[]);
CREATE TABLE retrievals (
    event_id VARCHAR PRIMARY KEY, session_id VARCHAR, project VARCHAR, ts TIMESTAMPTZ,
    query VARCHAR, results VARCHAR[], scores DOUBLE[]
);

-- derived: memory. `*_by` columns hold the id of the event that last changed the row: an
-- older event arriving late never overwrites a newer one, so any delivery order folds alike.
CREATE TABLE entities (
    entity_id VARCHAR PRIMARY KEY, type VARCHAR, name VARCHAR, normalized_name VARCHAR,
    aliases VARCHAR[], properties JSON, first_seen TIMESTAMPTZ, last_seen TIMESTAMPTZ,
    observations BIGINT, updated_by VARCHAR
);
CREATE TABLE facts (            -- each fact as the newest of its events has it
    fact_id VARCHAR PRIMARY KEY,
    source VARCHAR, relation VARCHAR, target VARCHAR, description VARCHAR, confidence DOUBLE,
    memory_type VARCHAR, network VARCHAR, category VARCHAR,
    valid_at TIMESTAMPTZ,       -- world time: when it became true
    invalid_at TIMESTAMPTZ,     -- world time: when it stopped being true
    created_at TIMESTAMPTZ,     -- system time: when reverie first learned it
    invalidated_at TIMESTAMPTZ, -- system time: when reverie learned it stopped being true
    expired_at TIMESTAMPTZ,     -- system time: when reverie forgot it
    superseded_by VARCHAR,
    reconsolidations BIGINT,
    updated_by VARCHAR
);
CREATE TABLE fact_history (     -- every event about a fact: `facts` and `facts_as_of` are read from it
    event_id VARCHAR PRIMARY KEY, fact_id VARCHAR, kind VARCHAR, ts TIMESTAMPTZ, recorded_at TIMESTAMPTZ,
    source VARCHAR, relation VARCHAR, target VARCHAR, description VARCHAR, confidence DOUBLE,
    memory_type VARCHAR, network VARCHAR, category VARCHAR,
    valid_at TIMESTAMPTZ,
    invalid_at TIMESTAMPTZ,     -- asserted with the fact, or the end a supersession gives it
    superseded_by VARCHAR, reason VARCHAR
);
CREATE TABLE provenance (        -- which observed events each derived event came from
    event_id VARCHAR, kind VARCHAR, subject VARCHAR, caused_by VARCHAR,
    PRIMARY KEY (event_id, caused_by)
);
CREATE TABLE episodes (
    episode_id VARCHAR PRIMARY KEY, session_id VARCHAR, title VARCHAR, summary VARCHAR,
    started_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, outcome VARCHAR, entities VARCHAR[],
    emotional_weight DOUBLE, consolidated_into VARCHAR, recorded_at TIMESTAMPTZ, updated_by VARCHAR
);
CREATE TABLE activation_log (  -- activation.recorded events, and each memory a recall returned
    event_id VARCHAR, memory_id VARCHAR, activated_at TIMESTAMPTZ, cause VARCHAR, weight DOUBLE,
    PRIMARY KEY (event_id, memory_id)
);
CREATE TABLE signals (
    signal_id VARCHAR PRIMARY KEY, event_id VARCHAR, session_id VARCHAR, ts TIMESTAMPTZ,
    signal VARCHAR, text VARCHAR, subject VARCHAR, sentiment DOUBLE
);  -- event_id: the newest event that detected it
CREATE TABLE preferences (
    preference_id VARCHAR PRIMARY KEY, subject VARCHAR, statement VARCHAR, strength DOUBLE,
    evidence BIGINT, crystallized_at TIMESTAMPTZ, updated_by VARCHAR
);
CREATE TABLE failures (
    failure_id VARCHAR PRIMARY KEY, signature VARCHAR, occurrences BIGINT, example VARCHAR,
    last_seen TIMESTAMPTZ, updated_by VARCHAR
);
CREATE TABLE tiers (memory_id VARCHAR PRIMARY KEY, tier VARCHAR, since TIMESTAMPTZ, updated_by VARCHAR);
CREATE TABLE communities (
    community_id VARCHAR PRIMARY KEY, members VARCHAR[], label VARCHAR, detected_at TIMESTAMPTZ,
    updated_by VARCHAR
);
CREATE TABLE opinions (          -- each opinion as the newest of its events has it
    opinion_id VARCHAR PRIMARY KEY, subject VARCHAR, statement VARCHAR, confidence DOUBLE,
    formed_at TIMESTAMPTZ, revised_at TIMESTAMPTZ, revisions BIGINT, updated_by VARCHAR
);
CREATE TABLE opinion_history (
    event_id VARCHAR PRIMARY KEY, opinion_id VARCHAR, kind VARCHAR, ts TIMESTAMPTZ,
    subject VARCHAR, statement VARCHAR, confidence DOUBLE, reason VARCHAR
);
CREATE TABLE observations (
    observation_id VARCHAR PRIMARY KEY, statement VARCHAR, about VARCHAR[], confidence DOUBLE,
    formed_at TIMESTAMPTZ, updated_by VARCHAR
);
