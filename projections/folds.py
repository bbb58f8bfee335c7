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


def _list(field: str) -> str:
    return f"coalesce((payload->'{field}')::VARCHAR[], [])"


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
            cwd = CASE WHEN excluded.first_event_at < sessions.first_event_at
                THEN coalesce(excluded.cwd, sessions.cwd) ELSE coalesce(sessions.cwd, excluded.cwd) END,
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
            coalesce((payload->'scores')::DOUBLE[], [])
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
        "facts",
        f"""
        INSERT INTO facts
        SELECT k, payload->>'source', payload->>'relation', payload->>'target', payload->>'description',
            coalesce((payload->>'confidence')::DOUBLE, 1.0), coalesce(payload->>'memory_type', 'semantic'),
            coalesce(payload->>'network', 'world'), coalesce(payload->>'category', 'context'),
            coalesce((payload->>'valid_at')::TIMESTAMPTZ, ts), (payload->>'invalid_at')::TIMESTAMPTZ,
            recorded_at, CASE WHEN payload->>'invalid_at' IS NOT NULL THEN recorded_at END,
            NULL, NULL, 0, id, id, NULL, NULL
        FROM {_latest(kinds.FACT_ASSERTED, "fact_id")}
        ON CONFLICT (fact_id) DO UPDATE SET
            source = excluded.source, relation = excluded.relation, target = excluded.target,
            description = excluded.description, confidence = excluded.confidence,
            memory_type = excluded.memory_type, network = excluded.network, category = excluded.category,
            valid_at = excluded.valid_at, invalid_at = coalesce(facts.invalid_at, excluded.invalid_at),
            invalidated_at = coalesce(facts.invalidated_at, excluded.invalidated_at),
            created_at = excluded.created_at, asserted_by = excluded.asserted_by, described_by = excluded.described_by
        WHERE excluded.asserted_by > facts.asserted_by
        """,
    ),
    (
        "fact_history",
        f"""
        INSERT INTO fact_history
        SELECT id, payload->>'fact_id', ts, kind, payload->>'description', (payload->>'confidence')::DOUBLE,
            payload->>'reason'
        FROM batch
        WHERE kind IN ('{kinds.FACT_RECONSOLIDATED}', '{kinds.FACT_SUPERSEDED}', '{kinds.FACT_EXPIRED}')
        """,
    ),
    (
        # each field takes its newest value over all the fact's reconsolidations so far
        "facts_reconsolidated",
        """
        UPDATE facts SET
            description = coalesce(h.description, facts.description),
            confidence = coalesce(h.confidence, facts.confidence),
            described_by = h.last_event,
            reconsolidations = h.times
        FROM (SELECT fact_id,
                  arg_max(description, event_id) FILTER (description IS NOT NULL) AS description,
                  arg_max(confidence, event_id) FILTER (confidence IS NOT NULL) AS confidence,
                  max(event_id) AS last_event, count(*) AS times
              FROM fact_history
              WHERE kind = 'fact.reconsolidated' AND fact_id IN (SELECT payload->>'fact_id' FROM batch)
              GROUP BY fact_id) h
        WHERE h.fact_id = facts.fact_id
        """,
    ),
    (
        "facts_superseded",
        f"""
        UPDATE facts SET
            invalid_at = coalesce((s.payload->>'invalid_at')::TIMESTAMPTZ, s.ts),
            invalidated_at = s.recorded_at,
            superseded_by = s.payload->>'by_fact_id',
            superseded_event = s.id
        FROM {_latest(kinds.FACT_SUPERSEDED, "fact_id")} s
        WHERE s.k = facts.fact_id AND (facts.superseded_event IS NULL OR s.id > facts.superseded_event)
        """,
    ),
    (
        "facts_expired",
        f"""
        UPDATE facts SET expired_at = e.recorded_at, expired_event = e.id
        FROM {_latest(kinds.FACT_EXPIRED, "fact_id")} e
        WHERE e.k = facts.fact_id AND (facts.expired_event IS NULL OR e.id > facts.expired_event)
        """,
    ),
    (
        "episodes",
        f"""
        INSERT INTO episodes
        SELECT k, payload->>'session_id', payload->>'title', payload->>'summary',
            (payload->>'started_at')::TIMESTAMPTZ, (payload->>'ended_at')::TIMESTAMPTZ,
            coalesce(payload->>'outcome', 'unknown'), {_list("entities")},
            coalesce((payload->>'emotional_weight')::DOUBLE, 1.0), NULL, recorded_at
        FROM {_latest(kinds.EPISODE_RECORDED, "episode_id")}
        ON CONFLICT (episode_id) DO NOTHING
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
            'unknown', [], 1.0, NULL, recorded_at
        FROM {_latest(kinds.EPISODE_CONSOLIDATED, "episode_id")}
        ON CONFLICT (episode_id) DO NOTHING
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
        SELECT id, payload->>'memory_id', coalesce((payload->>'at')::TIMESTAMPTZ, ts),
            coalesce(payload->>'cause', 'retrieved'), coalesce((payload->>'weight')::DOUBLE, 1.0)
        FROM batch WHERE kind = '{kinds.ACTIVATION_RECORDED}'
        """,
    ),
    (
        "signals",
        f"""
        INSERT INTO signals
        SELECT k, id, session_id, ts, payload->>'signal', payload->>'text', payload->>'subject',
            coalesce((payload->>'sentiment')::DOUBLE, 0.0)
        FROM {_latest(kinds.SIGNAL_DETECTED, "signal_id")}
        ON CONFLICT (signal_id) DO NOTHING
        """,
    ),
    (
        "preferences",
        f"""
        INSERT INTO preferences
        SELECT k, payload->>'subject', payload->>'statement', (payload->>'strength')::DOUBLE,
            (payload->>'evidence')::BIGINT, ts, id
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
        SELECT k, payload->>'signature', (payload->>'occurrences')::BIGINT, payload->>'example',
            (payload->>'last_seen')::TIMESTAMPTZ, id
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
        "opinions",
        f"""
        INSERT INTO opinions
        SELECT k, payload->>'subject', payload->>'statement', (payload->>'confidence')::DOUBLE, ts, NULL, 0, id, id
        FROM {_latest(kinds.OPINION_FORMED, "opinion_id")}
        ON CONFLICT (opinion_id) DO UPDATE SET subject = excluded.subject, formed_at = excluded.formed_at,
            formed_by = excluded.formed_by,
            statement = CASE WHEN opinions.revised_at IS NULL THEN excluded.statement ELSE opinions.statement END,
            confidence = CASE WHEN opinions.revised_at IS NULL THEN excluded.confidence ELSE opinions.confidence END
        WHERE excluded.formed_by > opinions.formed_by
        """,
    ),
    (
        "opinions_revised",
        f"""
        UPDATE opinions SET
            statement = coalesce(r.payload->>'statement', opinions.statement),
            confidence = coalesce((r.payload->>'confidence')::DOUBLE, opinions.confidence),
            revised_at = r.ts, updated_by = r.id
        FROM {_latest(kinds.OPINION_REVISED, "opinion_id")} r
        WHERE r.k = opinions.opinion_id AND r.id > opinions.updated_by
        """,
    ),
    (
        "opinion_revisions",
        f"""
        UPDATE opinions SET revisions = (SELECT count(DISTINCT event_id) FROM provenance p
            WHERE p.kind = '{kinds.OPINION_REVISED}' AND p.subject = opinions.opinion_id)
        WHERE opinion_id IN (SELECT payload->>'opinion_id' FROM batch WHERE kind = '{kinds.OPINION_REVISED}')
        """,
    ),
    (
        "observations",
        f"""
        INSERT INTO observations
        SELECT k, payload->>'statement', {_list("about")}, coalesce((payload->>'confidence')::DOUBLE, 1.0), ts
        FROM {_latest(kinds.OBSERVATION_FORMED, "observation_id")}
        ON CONFLICT (observation_id) DO NOTHING
        """,
    ),
]
