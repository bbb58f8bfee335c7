"""The folds: how each kind of event changes the projection tables, as set-based SQL.

Every statement reads the table `batch` (events not folded yet, each once) and changes one
table. They run in this order, so a batch holding a fact and its supersession folds like
two batches would. Each fold is commutative across batches: counts add up, times take their
min or max, and a row changed by an event keeps that event's id, so an older event that
arrives late never overwrites a newer one. That makes a replay (one pass in id order)
produce the same tables as the live projector (batch after batch, in arrival order).
"""

from schemas import kinds

_DERIVED = ", ".join(f"'{k}'" for k in sorted(kinds.DERIVED_KINDS))


def _latest(kind: str, key: str) -> str:
    """The `batch` rows of `kind`, the newest per payload field `key`, with that key as `k`."""
    return (
        f"(SELECT *, payload->>'{key}' AS k FROM batch WHERE kind = '{kind}' "
        f"QUALIFY row_number() OVER (PARTITION BY payload->>'{key}' ORDER BY id DESC) = 1)"
    )


_FACT_KINDS = ", ".join(
    f"'{k}'"
    for k in (kinds.FACT_ASSERTED, kinds.FACT_RECONSOLIDATED, kinds.FACT_SUPERSEDED, kinds.FACT_EXPIRED)
)
_FACT_STATE = (
    "source, relation, target, description, confidence, memory_type, network, category, "
    "valid_at, invalid_at, created_at"
)


def _fact_state(history: str) -> str:
    """Each fact's state from the fact events in `history`: the newest event says each field."""
    asserted = f"kind = '{kinds.FACT_ASSERTED}'"
    shaping = f"kind IN ('{kinds.FACT_ASSERTED}', '{kinds.FACT_RECONSOLIDATED}')"
    ending = f"kind IN ('{kinds.FACT_ASSERTED}', '{kinds.FACT_SUPERSEDED}')"
    living = f"kind IN ('{kinds.FACT_ASSERTED}', '{kinds.FACT_EXPIRED}')"
    return f"""
        SELECT fact_id,
            arg_max(source, event_id) FILTER ({asserted}) AS source,
            arg_max(relation, event_id) FILTER ({asserted}) AS relation,
            arg_max_null(target, event_id) FILTER ({asserted}) AS target,
            arg_max(description, event_id) FILTER ({shaping}) AS description,
            coalesce(arg_max(confidence, event_id) FILTER ({shaping}), 1.0) AS confidence,
            coalesce(arg_max(memory_type, event_id) FILTER ({asserted}), 'semantic') AS memory_type,
            coalesce(arg_max(network, event_id) FILTER ({asserted}), 'world') AS network,
            coalesce(arg_max(category, event_id) FILTER ({asserted}), 'context') AS category,
            coalesce(arg_max(valid_at, event_id) FILTER ({asserted}), min(ts) FILTER ({asserted})) AS valid_at,
            arg_max_null(invalid_at, event_id) FILTER ({ending}) AS invalid_at,
            min(recorded_at) FILTER ({asserted}) AS created_at,
            CASE WHEN arg_max_null(invalid_at, event_id) FILTER ({ending}) IS NOT NULL
                THEN arg_max(recorded_at, event_id) FILTER ({ending}) END AS invalidated_at,
            CASE WHEN arg_max(kind, event_id) FILTER ({living}) = '{kinds.FACT_EXPIRED}'
                THEN max(recorded_at) FILTER (kind = '{kinds.FACT_EXPIRED}') END AS expired_at,
            arg_max_null(superseded_by, event_id) FILTER ({ending}) AS superseded_by,
            count(*) FILTER (kind = '{kinds.FACT_RECONSOLIDATED}') AS reconsolidations,
            max(event_id) AS updated_by
        FROM {history}
        GROUP BY fact_id
        HAVING count(*) FILTER ({asserted}) > 0
    """


def _list(field: str) -> str:
    return f"coalesce(TRY_CAST(payload->'{field}' AS VARCHAR[]), [])"


def _summary_of_input() -> str:
    """What a tool was asked to do, in one line: the command, the file, the pattern, or the JSON."""
    return (
        "left(coalesce(payload->>'$.tool_input.command', payload->>'$.tool_input.file_path', "
        "payload->>'$.tool_input.notebook_path', payload->>'$.tool_input.pattern', "
        "payload->>'$.tool_input.url', payload->>'$.tool_input.query', "
        "(payload->'tool_input')::VARCHAR), 300)"
    )


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
            count(*) FILTER (kind = '{kinds.PROMPT_SUBMITTED}'),
            count(*) FILTER (kind IN ('{kinds.TOOL_USED}', '{kinds.TOOL_FAILED}')),
            count(*) FILTER (kind = '{kinds.TOOL_FAILED}')
        FROM batch WHERE session_id IS NOT NULL AND kind NOT IN ({_DERIVED})
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
            errors = sessions.errors + excluded.errors
        """,
    ),
    (
        "prompts",
        f"""
        INSERT INTO prompts
        SELECT id, session_id, project, agent, ts, payload->>'prompt', length(payload->>'prompt')
        FROM batch WHERE kind = '{kinds.PROMPT_SUBMITTED}'
        """,
    ),
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
            CASE b.kind WHEN '{kinds.TOOL_FAILED}' THEN 'error' ELSE 'ok' END,
            epoch_ms(b.ts) - epoch_ms(r.ts),
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
        SELECT id, session_id, project, ts, payload->>'tool_name',
            left(coalesce(payload->>'error', (payload->'error')::VARCHAR), 4000)
        FROM batch WHERE kind = '{kinds.TOOL_FAILED}'
        """,
    ),
    (
        "messages",
        f"""
        INSERT INTO messages
        SELECT id, session_id, project, agent, ts, payload->>'last_assistant_message'
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
    (
        "remembered",
        f"""
        INSERT INTO remembered SELECT id, project, ts, payload->>'text', {_list("tags")}
        FROM batch WHERE kind = '{kinds.MEMORY_REMEMBERED}'
        """,
    ),
    (
        "retrievals",
        f"""
        INSERT INTO retrievals
        SELECT id, session_id, project, ts, payload->>'query', {_list("results")},
            coalesce(TRY_CAST(payload->'scores' AS DOUBLE[]), [])
        FROM batch WHERE kind = '{kinds.MEMORY_RETRIEVED}'
        """,
    ),
    (
        "provenance",
        f"""
        INSERT INTO provenance
        SELECT DISTINCT id, kind, coalesce(payload->>'fact_id', payload->>'entity_id', payload->>'episode_id',
            payload->>'signal_id', payload->>'preference_id', payload->>'failure_id', payload->>'memory_id',
            payload->>'community_id', payload->>'opinion_id', payload->>'observation_id'), unnest(caused_by)
        FROM batch WHERE kind IN ({_DERIVED})
        """,
    ),
    (
        "entities",
        f"""
        INSERT INTO entities
        SELECT payload->>'entity_id',
            arg_max(payload->>'type', id), arg_max(payload->>'name', id), arg_max(payload->>'normalized_name', id),
            list_sort(list_distinct(flatten(list({_list("aliases")})))),
            arg_max(coalesce(payload->'properties', '{{}}'::JSON), id),
            min(ts), max(ts), count(*), max(id)
        FROM batch WHERE kind = '{kinds.ENTITY_OBSERVED}'
        GROUP BY payload->>'entity_id'
        ON CONFLICT (entity_id) DO UPDATE SET
            type = CASE WHEN excluded.updated_by > entities.updated_by THEN excluded.type ELSE entities.type END,
            name = CASE WHEN excluded.updated_by > entities.updated_by THEN excluded.name ELSE entities.name END,
            normalized_name = CASE WHEN excluded.updated_by > entities.updated_by
                THEN excluded.normalized_name ELSE entities.normalized_name END,
            properties = CASE WHEN excluded.updated_by > entities.updated_by
                THEN excluded.properties ELSE entities.properties END,
            aliases = list_sort(list_distinct(list_concat(entities.aliases, excluded.aliases))),
            first_seen = least(entities.first_seen, excluded.first_seen),
            last_seen = greatest(entities.last_seen, excluded.last_seen),
            observations = entities.observations + excluded.observations,
            updated_by = greatest(entities.updated_by, excluded.updated_by)
        """,
    ),
    (
        "fact_history",
        f"""
        INSERT INTO fact_history
        SELECT id, payload->>'fact_id', kind, ts, recorded_at, payload->>'source', payload->>'relation',
            payload->>'target', payload->>'description', TRY_CAST(payload->>'confidence' AS DOUBLE),
            payload->>'memory_type', payload->>'network', payload->>'category',
            TRY_CAST(payload->>'valid_at' AS TIMESTAMPTZ),
            CASE kind WHEN '{kinds.FACT_SUPERSEDED}' THEN coalesce(TRY_CAST(payload->>'invalid_at' AS TIMESTAMPTZ), ts)
                ELSE TRY_CAST(payload->>'invalid_at' AS TIMESTAMPTZ) END,
            payload->>'by_fact_id', payload->>'reason'
        FROM batch WHERE kind IN ({_FACT_KINDS})
        """,
    ),
    (
        # every fact an event of this batch touched, as its whole history now says
        "facts",
        f"""
        INSERT OR REPLACE INTO facts
        SELECT fact_id, {_FACT_STATE}, invalidated_at, expired_at, superseded_by, reconsolidations, updated_by
        FROM ({
            _fact_state(
                f"(SELECT * FROM fact_history WHERE fact_id IN "
                f"(SELECT payload->>'fact_id' FROM batch WHERE kind IN ({_FACT_KINDS})))"
            )
        })
        """,
    ),
    (
        "episodes",
        f"""
        INSERT INTO episodes
        SELECT k, payload->>'session_id', payload->>'title', payload->>'summary',
            TRY_CAST(payload->>'started_at' AS TIMESTAMPTZ), TRY_CAST(payload->>'ended_at' AS TIMESTAMPTZ),
            coalesce(payload->>'outcome', 'unknown'), {_list("entities")},
            coalesce(TRY_CAST(payload->>'emotional_weight' AS DOUBLE), 1.0), NULL, recorded_at, id
        FROM {_latest(kinds.EPISODE_RECORDED, "episode_id")}
        ON CONFLICT (episode_id) DO UPDATE SET
            session_id = excluded.session_id, title = excluded.title, summary = excluded.summary,
            started_at = excluded.started_at, ended_at = excluded.ended_at, outcome = excluded.outcome,
            entities = excluded.entities, emotional_weight = excluded.emotional_weight,
            recorded_at = excluded.recorded_at, updated_by = excluded.updated_by
        WHERE excluded.updated_by > episodes.updated_by
        """,
    ),
    (
        "episodes_consolidated",
        f"""
        INSERT INTO episodes
        SELECT k, NULL, payload->>'title', payload->>'summary',
            (SELECT min(started_at) FROM episodes WHERE list_contains({_list("from_episodes")}, episode_id)),
            (SELECT max(coalesce(ended_at, started_at)) FROM episodes
             WHERE list_contains({_list("from_episodes")}, episode_id)),
            'unknown', [], 1.0, NULL, recorded_at, id
        FROM {_latest(kinds.EPISODE_CONSOLIDATED, "episode_id")}
        ON CONFLICT (episode_id) DO UPDATE SET
            title = excluded.title, summary = excluded.summary, started_at = excluded.started_at,
            ended_at = excluded.ended_at, recorded_at = excluded.recorded_at, updated_by = excluded.updated_by
        WHERE excluded.updated_by > episodes.updated_by
        """,
    ),
    (
        "episodes_merged",
        f"""
        UPDATE episodes SET consolidated_into = c.k
        FROM (SELECT k, unnest({_list("from_episodes")}) AS source
              FROM {_latest(kinds.EPISODE_CONSOLIDATED, "episode_id")}) c
        WHERE c.source = episodes.episode_id
            AND (episodes.consolidated_into IS NULL OR c.k > episodes.consolidated_into)
        """,
    ),
    (
        "activation_log",
        f"""
        INSERT INTO activation_log
        SELECT id, payload->>'memory_id', coalesce(TRY_CAST(payload->>'at' AS TIMESTAMPTZ), ts),
            coalesce(payload->>'cause', 'retrieved'), coalesce(TRY_CAST(payload->>'weight' AS DOUBLE), 1.0)
        FROM batch WHERE kind = '{kinds.ACTIVATION_RECORDED}'
        UNION ALL  -- every recalled memory was used then (spaced repetition)
        SELECT DISTINCT id, unnest({_list("results")}), ts, 'recalled', 1.0
        FROM batch WHERE kind = '{kinds.MEMORY_RETRIEVED}'
        """,
    ),
    (
        "signals",
        f"""
        INSERT INTO signals
        SELECT k, id, session_id, ts, payload->>'signal', payload->>'text', payload->>'subject',
            coalesce(TRY_CAST(payload->>'sentiment' AS DOUBLE), 0.0)
        FROM {_latest(kinds.SIGNAL_DETECTED, "signal_id")}
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
            TRY_CAST(payload->>'evidence' AS BIGINT), ts, id
        FROM {_latest(kinds.PREFERENCE_CRYSTALLIZED, "preference_id")}
        ON CONFLICT (preference_id) DO UPDATE SET
            subject = excluded.subject, statement = excluded.statement, strength = excluded.strength,
            evidence = excluded.evidence, crystallized_at = excluded.crystallized_at, updated_by = excluded.updated_by
        WHERE excluded.updated_by > preferences.updated_by
        """,
    ),
    (
        "failures",
        f"""
        INSERT INTO failures
        SELECT k, payload->>'signature', TRY_CAST(payload->>'occurrences' AS BIGINT), payload->>'example',
            TRY_CAST(payload->>'last_seen' AS TIMESTAMPTZ), id
        FROM {_latest(kinds.FAILURE_RECURRING, "failure_id")}
        ON CONFLICT (failure_id) DO UPDATE SET
            signature = excluded.signature, occurrences = excluded.occurrences, example = excluded.example,
            last_seen = excluded.last_seen, updated_by = excluded.updated_by
        WHERE excluded.updated_by > failures.updated_by
        """,
    ),
    (
        "tiers",
        f"""
        INSERT INTO tiers SELECT k, payload->>'to_tier', ts, id FROM {_latest(kinds.TIER_PROMOTED, "memory_id")}
        ON CONFLICT (memory_id) DO UPDATE SET tier = excluded.tier, since = excluded.since,
            updated_by = excluded.updated_by
        WHERE excluded.updated_by > tiers.updated_by
        """,
    ),
    (
        "communities",
        f"""
        INSERT INTO communities
        SELECT k, list_sort({_list("members")}), coalesce(payload->>'label', ''), ts, id
        FROM {_latest(kinds.COMMUNITY_DETECTED, "community_id")}
        ON CONFLICT (community_id) DO UPDATE SET members = excluded.members, label = excluded.label,
            detected_at = excluded.detected_at, updated_by = excluded.updated_by
        WHERE excluded.updated_by > communities.updated_by
        """,
    ),
    (
        "opinion_history",
        f"""
        INSERT INTO opinion_history
        SELECT id, payload->>'opinion_id', kind, ts, payload->>'subject', payload->>'statement',
            TRY_CAST(payload->>'confidence' AS DOUBLE), payload->>'reason'
        FROM batch WHERE kind IN ('{kinds.OPINION_FORMED}', '{kinds.OPINION_REVISED}')
        """,
    ),
    (
        # every opinion an event of this batch touched, as its whole history now says
        "opinions",
        f"""
        INSERT OR REPLACE INTO opinions
        SELECT opinion_id,
            arg_max_null(subject, event_id) FILTER (kind = '{kinds.OPINION_FORMED}'),
            arg_max(statement, event_id), arg_max(confidence, event_id),
            min(ts) FILTER (kind = '{kinds.OPINION_FORMED}'),
            max(ts) FILTER (kind = '{kinds.OPINION_REVISED}'),
            count(*) FILTER (kind = '{kinds.OPINION_REVISED}'),
            max(event_id)
        FROM opinion_history
        WHERE opinion_id IN (SELECT payload->>'opinion_id' FROM batch
                             WHERE kind IN ('{kinds.OPINION_FORMED}', '{kinds.OPINION_REVISED}'))
        GROUP BY opinion_id
        HAVING count(*) FILTER (kind = '{kinds.OPINION_FORMED}') > 0
        """,
    ),
    (
        "observations",
        f"""
        INSERT INTO observations
        SELECT k, payload->>'statement', {_list("about")}, coalesce(TRY_CAST(payload->>'confidence' AS DOUBLE), 1.0),
            ts, id
        FROM {_latest(kinds.OBSERVATION_FORMED, "observation_id")}
        ON CONFLICT (observation_id) DO UPDATE SET statement = excluded.statement, about = excluded.about,
            confidence = excluded.confidence, formed_at = excluded.formed_at, updated_by = excluded.updated_by
        WHERE excluded.updated_by > observations.updated_by
        """,
    ),
]


# Bi-temporal time travel: the facts true at `valid_time`, as reverie knew them at `known_time`
# (their state from the fact events recorded by then: a supersession, a rewording or a
# forgetting learned later is not known yet).
FACTS_AS_OF = f"""
CREATE MACRO facts_as_of(valid_time, known_time) AS TABLE
SELECT fact_id, {_FACT_STATE}
FROM ({_fact_state("(SELECT * FROM fact_history WHERE recorded_at <= known_time)")})
WHERE expired_at IS NULL AND valid_at <= valid_time AND (invalid_at IS NULL OR invalid_at > valid_time)
"""
