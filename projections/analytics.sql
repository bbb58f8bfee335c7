-- Views for people asking questions of their memory (see `reverie sql --help`).

-- facts_current: what is believed true now (projections/folds/facts.py's `current`, the one
-- definition every reader uses).
-- facts_as_of(valid_time, known_time): see FACTS_AS_OF in projections/folds/facts.py.

CREATE VIEW tool_usage_per_day AS
SELECT date_trunc('day', ts) AS day, project, tool, count(*) AS uses,
    count(*) FILTER (outcome = 'error') AS errors, median(duration_ms) AS median_ms
FROM tool_uses
GROUP BY ALL;

-- Each fact's tier (workers/dynamics/lifecycle.py): long_term once promoted (3+ sessions), working
-- while less than a day old, else short_term; expired: forgotten (hidden from recall, kept).
CREATE VIEW memory_tiers AS
SELECT f.fact_id AS memory_id, f.project,
    CASE WHEN f.expired_at IS NOT NULL THEN 'expired'
        WHEN t.tier IS NOT NULL THEN t.tier
        WHEN f.created_at > now() - INTERVAL 1 DAY THEN 'working'
        ELSE 'short_term' END AS tier,
    coalesce(t.since, f.created_at) AS since
FROM facts f LEFT JOIN tiers t ON t.memory_id = f.fact_id;

-- Each month's mood per project: its sessions' mean sentiment (each session's prompts' lexical
-- frustration, -1 furious .. 0 calm), and how often frustration rose (HORA's trend rule) or the
-- user corrected the agent.
CREATE VIEW monthly_sentiment AS
SELECT date_trunc('month', s.ts) AS month, ss.project,
    count(*) FILTER (s.signal = 'mood') AS sessions,
    avg(s.sentiment) FILTER (s.signal = 'mood') AS average_sentiment,
    count(*) FILTER (s.signal = 'frustration') AS frustrations,
    count(*) FILTER (s.signal = 'correction') AS corrections
FROM signals s LEFT JOIN sessions ss USING (session_id)
GROUP BY ALL;

CREATE VIEW monthly_tool_usage AS
SELECT date_trunc('month', ts) AS month, project, tool, count(*) AS uses,
    count(*) FILTER (outcome = 'error') AS errors, count(DISTINCT session_id) AS sessions
FROM tool_uses
GROUP BY ALL;

-- Everything that happened to an entity (sort by happened_at for its story).
-- project: where a row holds (that of its fact, opinion or signal's session); everywhere: a
-- global fact's or opinion's. An entity's first sighting belongs to no project: it is shown
-- where another row about the entity is.
CREATE VIEW entity_timeline AS
SELECT entity_id, name, first_seen AS happened_at, 'first seen' AS what, type AS detail,
    NULL AS project, false AS everywhere
FROM entities
UNION ALL
SELECT e.entity_id, e.name, f.valid_at, 'fact: ' || f.relation, f.description, f.project, f.scope = 'global'
FROM entities e JOIN facts f ON e.entity_id IN (f.source, f.target)
UNION ALL
SELECT e.entity_id, e.name, f.invalid_at, 'fact ended: ' || f.relation, f.description, f.project,
    f.scope = 'global'
FROM entities e JOIN facts f ON e.entity_id IN (f.source, f.target) WHERE f.invalid_at IS NOT NULL
UNION ALL
SELECT e.entity_id, e.name, s.ts, 'signal: ' || s.signal, s.text, ss.project, false
FROM entities e JOIN signals s ON s.subject = e.entity_id LEFT JOIN sessions ss USING (session_id)
UNION ALL
SELECT e.entity_id, e.name, o.formed_at, 'opinion', o.statement, o.project, o.scope = 'global'
FROM entities e JOIN opinions o ON o.subject = e.entity_id;

-- Every memory with something to say: what recall ranks, and what the embedder embeds.
-- project: where it holds (NULL: everywhere); origin: the project it was made in, global or not.
CREATE VIEW memory_texts AS
-- the passages that hold now: a file's passages of its newest version seen whole, and an edit's
-- until the file is seen whole after it; every other passage
WITH newest_files AS (
    SELECT project, key, arg_max(version, seen_last) AS version, max(seen_last) AS seen_last
    FROM file_versions GROUP BY ALL
),
passages_current AS (
    SELECT p.* FROM passages p
    LEFT JOIN newest_files n ON coalesce(n.project, chr(0)) = coalesce(p.project, chr(0))
        AND n.key = CASE WHEN p.key LIKE 'edit:%' THEN 'file:' || substr(p.key, 6) ELSE p.key END
    WHERE n.key IS NULL OR p.version = n.version OR (p.key LIKE 'edit:%' AND p.seen_last > n.seen_last)
),
conversation AS (
    -- a prompt is the user's; one to a subagent is the agent's task for it (Claude Code's own
    -- texts in the user's turn are never in `prompts`: the fold keeps them in harness_messages)
    SELECT event_id AS memory_id, CASE WHEN agent = 'main' THEN 'prompt' ELSE 'task' END AS kind, project,
        session_id, ts, clean AS text, project AS origin
    FROM prompts
    UNION ALL
    SELECT event_id, 'message', project, session_id, ts, clean, project
    FROM messages WHERE NOT is_noise_clean(clean) AND summary_of(text) IS NULL
),
-- Claude Code's summaries of compacted conversations: distilled, not a turn (the summary itself,
-- without the analysis before it)
summaries AS (
    SELECT event_id AS memory_id, 'summary' AS kind, project, session_id, ts, summary_of(text) AS text,
        project AS origin
    FROM messages WHERE summary_of(text) IS NOT NULL
    UNION ALL
    SELECT c.event_id, 'summary', s.project, c.session_id, c.ts, coalesce(summary_of(c.summary), c.summary),
        s.project
    FROM compactions c JOIN sessions s USING (session_id) WHERE c.summary IS NOT NULL
),
memories AS (
    SELECT * FROM conversation
    UNION ALL
    SELECT * FROM summaries
    UNION ALL
    SELECT event_id, 'remembered', CASE WHEN scope <> 'global' THEN project END, NULL, ts,
        CASE outcome WHEN 'failed' THEN 'Anti-pattern (it failed): ' WHEN 'success' THEN 'Worked: ' ELSE '' END
        || text, project
    FROM remembered
    UNION ALL
    -- a fact's time is when it became true (world time), not when reverie learned it (an import)
    SELECT f.fact_id, 'fact', CASE WHEN f.scope <> 'global' THEN f.project END, NULL,
        coalesce(f.valid_at, f.created_at),
        coalesce(nullif(trim(f.description), ''), concat_ws(' ', s.name, replace(f.relation, '_', ' '), t.name)),
        f.project
    FROM facts f
    LEFT JOIN entities s ON s.entity_id = f.source
    LEFT JOIN entities t ON t.entity_id = f.target
    UNION ALL
    SELECT episode_id, 'episode', project, session_id, started_at, concat_ws('. ', title, summary), project
    FROM episodes
    UNION ALL
    -- reverie's own reflection is labelled as such wherever it is shown: an answer, not a fact
    SELECT observation_id, 'observation', CASE WHEN scope <> 'global' THEN project END, NULL, formed_at,
        'Observation reverie formed (confidence ' || round(confidence, 2) || '): ' || statement, project
    FROM observations
    UNION ALL
    SELECT opinion_id, 'opinion', CASE WHEN scope <> 'global' THEN project END, NULL, formed_at,
        'Reflection, reverie''s opinion (confidence ' || round(confidence, 2) || '): ' || statement, project
    FROM opinions
    UNION ALL
    SELECT preference_id, 'preference', CASE WHEN scope <> 'global' THEN project END, NULL, crystallized_at,
        statement, project
    FROM preferences
    UNION ALL
    -- Claude Code's own memory files as their newest reading has them (a user's file once, for
    -- every project), labelled: what recall shows of them, never what the hooks inject
    SELECT event_id, 'claude-memory', CASE WHEN scope <> 'global' THEN project END, NULL, ts,
        'From Claude Code''s memory (' || concat_ws(', ', regexp_extract(coalesce(path, ''), '[^/\\]*$'),
            nullif(heading, '')) || '): ' || text,
        project
    FROM (
        SELECT *, max(ts) OVER file AS newest, arg_max(digest, event_id) OVER file AS newest_digest
        FROM claude_memories
        WINDOW file AS (PARTITION BY CASE WHEN scope = 'global' THEN NULL ELSE project END, path)
    )
    WHERE text <> '' AND coalesce(ts = newest AND digest = newest_digest, ts IS NULL)
    UNION ALL
    -- what the session's tools showed (kind 'passage') and what the agent said mid-turn ('said'),
    -- as of when last shown
    SELECT passage_id, CASE action WHEN 'said' THEN 'said' ELSE 'passage' END, project, session_id, seen_last,
        text, project
    FROM passages_current
)
SELECT * FROM memories m
WHERE regexp_matches(text, '\S')
    -- forgotten from a project where it holds: a project cannot hide another's memory
    AND NOT EXISTS (SELECT 1 FROM forgotten f
                    WHERE f.memory_id = m.memory_id AND (m.project IS NULL OR f.project = m.project));

-- What the embedder keeps in the vectors: every memory text, with a hash that changes with it.
CREATE VIEW memory_documents AS
SELECT *, sha256(text) AS content_hash FROM memory_texts;

-- Which entities each memory is about.
CREATE VIEW memory_entities AS
SELECT fact_id AS memory_id, source AS entity_id FROM facts WHERE source IS NOT NULL
UNION SELECT fact_id, target FROM facts WHERE target IS NOT NULL
UNION SELECT episode_id, unnest(entities) FROM episodes
UNION SELECT observation_id, unnest(about) FROM observations
UNION SELECT opinion_id, subject FROM opinions WHERE subject IS NOT NULL;

-- What each project may see (project NULL: every project): every memory recall ranks, and every
-- entity one of them is about.
CREATE VIEW memory_scopes AS
SELECT memory_id AS id, project FROM memory_texts
UNION
SELECT e.entity_id, m.project FROM memory_entities e JOIN memory_texts m USING (memory_id);

-- Hebbian learning between entities used together: each recall that gave memories of both, which
-- the agent then used (workers/dynamics/decay.py judges it), moves their weight w to w + 0.1 (1 - w),
-- so after n such recalls w = 1 - 0.9^n; unused, it decays, w (1 - 0.01 dt), dt the days since they
-- were last used together (gone in 100). Being shown together alone strengthens nothing.
CREATE VIEW associations AS
WITH recalled AS (
    SELECT DISTINCT p.caused_by AS event_id, a.activated_at AS ts, e.entity_id
    FROM activation_log a
    JOIN provenance p ON p.event_id = a.event_id
    JOIN memory_entities e ON e.memory_id = a.memory_id
    WHERE a.cause = 'used'
)
SELECT a.entity_id AS entity_a, b.entity_id AS entity_b, count(*) AS recalled_together,
    max(a.ts) AS last_together,
    (1 - pow(0.9, count(*))) * greatest(0, 1 - 0.01 * date_diff('second', max(a.ts), now()) / 86400) AS weight
FROM recalled a JOIN recalled b ON a.event_id = b.event_id AND a.entity_id < b.entity_id
GROUP BY ALL;

-- One row: how healthy memory is, HORA's eight metrics. embedding_coverage: the share of
-- memory_texts whose text as it is now has its vectors (`embedded` is what the embedder last
-- published); average_activation: the mean ACT-R activation over days of the facts recall shows
-- (each use, its learning included, a day old at least; workers/dynamics/lifecycle.py expires
-- those below -2.0); dream_efficiency: facts the dream cycle distilled per episode.
-- A ratio or a mean over nothing (no facts, no recall yet) is NULL, never 0 or 1.
CREATE VIEW memory_health AS
SELECT
    (SELECT count(*) FROM facts_current) AS facts,
    (SELECT 1 - count(DISTINCT lower(description)) / nullif(count(*), 0) FROM facts_current) AS duplicate_ratio,
    (SELECT count(e.memory_id) / nullif(count(*), 0) FROM memory_documents m
        LEFT JOIN embedded e USING (memory_id, content_hash)) AS embedding_coverage,
    (SELECT avg(activation) FROM (
        SELECT ln(sum(pow(greatest(date_diff('second', u.at, now()) / 86400, 1), -0.5))) AS activation
        FROM (SELECT fact_id AS memory_id, ts AS at FROM fact_history
              UNION ALL SELECT memory_id, activated_at FROM activation_log WHERE cause NOT IN ('unused', 'failed')) u
        JOIN facts_current f ON f.fact_id = u.memory_id
        GROUP BY u.memory_id)) AS average_activation,
    (SELECT avg((reconsolidations > 0)::INT) FROM facts) AS reconsolidation_rate,
    (SELECT avg((len(results) > 0)::INT) FROM retrievals) AS retrieval_hit_rate,
    (SELECT count(*) FILTER (network = 'observation') FROM facts)
        / nullif((SELECT count(*) FROM episodes WHERE session_id IS NOT NULL), 0) AS dream_efficiency,
    (SELECT histogram(memory_type) FROM facts_current) AS memory_types,
    (SELECT avg(confidence) FROM facts_current) AS average_confidence;

-- How related two projects are (HORA's measure): the share of their dependencies they have in
-- common (of all either has) times 0.6, plus 0.4 if facts of both name one entity that is
-- neither a dependency nor a project. Memory never crosses projects on its own: recall weighs
-- global memories by it (docs/recall.md). Equi-joins and counts throughout, so that reading it
-- takes tens of milliseconds at 100 projects and 100k facts, not seconds.
CREATE VIEW related_projects AS
WITH dependencies AS (
    SELECT DISTINCT project, target AS entity_id FROM facts_current
    WHERE relation = 'depends_on' AND target IS NOT NULL AND project IS NOT NULL
),
named AS (
    SELECT DISTINCT f.project, e.entity_id
    FROM (SELECT project, source AS entity_id FROM facts_current
          UNION ALL SELECT project, target FROM facts_current) f
    JOIN entities e USING (entity_id)
    WHERE f.project IS NOT NULL AND e.type <> 'project'
        AND e.entity_id NOT IN (SELECT entity_id FROM dependencies)
),
projects AS (
    SELECT project, count(entity_id) AS dependencies
    FROM (SELECT project, entity_id FROM dependencies UNION ALL SELECT DISTINCT project, NULL FROM named)
    GROUP BY project
),
shared AS (
    SELECT x.project, y.project AS other, count(*) AS dependencies
    FROM dependencies x JOIN dependencies y USING (entity_id) WHERE x.project <> y.project
    GROUP BY ALL
),
named_by_both AS (
    SELECT DISTINCT x.project, y.project AS other
    FROM named x JOIN named y USING (entity_id) WHERE x.project <> y.project
)
SELECT a.project, b.project AS other,
    coalesce(s.dependencies / (a.dependencies + b.dependencies - s.dependencies), 0) * 0.6
    + CASE WHEN n.project IS NOT NULL THEN 0.4 ELSE 0 END AS relevance
FROM projects a JOIN projects b ON a.project <> b.project
LEFT JOIN shared s ON s.project = a.project AND s.other = b.project
LEFT JOIN named_by_both n ON n.project = a.project AND n.other = b.project;
