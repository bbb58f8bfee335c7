"""What memory holds as statements: entities, bi-temporal facts and their history, what was
asked to be remembered, opinions and observations."""

from projections.folds.base import json_list, latest, newest_choice
from schemas import kinds
from schemas.ontology import ALIASES, RELATIONS

_FACT_KINDS = ", ".join(
    f"'{k}'"
    for k in (kinds.FACT_ASSERTED, kinds.FACT_RECONSOLIDATED, kinds.FACT_SUPERSEDED, kinds.FACT_EXPIRED)
)
_FACT_STATE = (
    "source, relation, target, description, confidence, memory_type, network, category, "
    "project, scope, topic, dimensions, stated_relation, valid_at, invalid_at, created_at"
)


def _fact_state(history: str) -> str:
    """Each fact's state from the fact events in `history`: the newest event says each field."""
    asserted = f"kind = '{kinds.FACT_ASSERTED}'"
    shaping = f"kind IN ('{kinds.FACT_ASSERTED}', '{kinds.FACT_RECONSOLIDATED}')"
    ending = f"kind IN ('{kinds.FACT_ASSERTED}', '{kinds.FACT_SUPERSEDED}')"
    # Forgetting hides a fact that another one stands for (a duplicate). Decay orders memories and
    # hides none: the decay expiries an earlier lifecycle emitted (no duplicate_of) fold as nothing.
    forgetting = f"kind = '{kinds.FACT_EXPIRED}' AND duplicate_of IS NOT NULL"
    living = f"kind = '{kinds.FACT_ASSERTED}' OR {forgetting}"
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
            arg_max(project, event_id) FILTER ({asserted}) AS project,
            coalesce(arg_max(scope, event_id) FILTER ({asserted}), 'project') AS scope,
            arg_max_null(topic, event_id) FILTER ({asserted}) AS topic,
            arg_max_null(dimensions, event_id) FILTER ({asserted}) AS dimensions,
            arg_max_null(stated_relation, event_id) FILTER ({asserted}) AS stated_relation,
            coalesce(arg_max(valid_at, event_id) FILTER ({asserted}), min(ts) FILTER ({asserted})) AS valid_at,
            arg_max_null(invalid_at, event_id) FILTER ({ending}) AS invalid_at,
            min(recorded_at) FILTER ({asserted}) AS created_at,
            CASE WHEN arg_max_null(invalid_at, event_id) FILTER ({ending}) IS NOT NULL
                THEN arg_max(recorded_at, event_id) FILTER ({ending}) END AS invalidated_at,
            -- forgetting is system time: the newest of assertion and expiry as reverie learned them
            -- (an expiry caused by the assertion itself shares its id's millisecond)
            CASE WHEN arg_max(kind, {{'known': recorded_at, 'id': event_id}}) FILTER ({living}) = '{kinds.FACT_EXPIRED}'
                THEN max(recorded_at) FILTER ({forgetting}) END AS expired_at,
            arg_max_null(superseded_by, event_id) FILTER ({ending}) AS superseded_by,
            count(*) FILTER (kind = '{kinds.FACT_RECONSOLIDATED}') AS reconsolidations,
            max(event_id) AS updated_by,
            arg_max_null(duplicate_of, event_id) FILTER (kind = '{kinds.FACT_EXPIRED}') AS duplicate_of
        FROM {history}
        GROUP BY fact_id
        HAVING count(*) FILTER ({asserted}) > 0
    """


def _ontology(column: str) -> tuple[str, str]:
    """SQL for `column`'s relation in the ontology, and whether it reads the other way: events
    written before the ontology (schema v1) name relations it maps (schemas/ontology.py)."""
    known = ", ".join(f"'{r}'" for r in RELATIONS)
    mapped = " ".join(f"WHEN '{alias}' THEN '{r}'" for alias, (r, _) in ALIASES.items())
    backwards = ", ".join(f"'{alias}'" for alias, (_, flipped) in ALIASES.items() if flipped)
    relation = f"CASE WHEN {column} IN ({known}) THEN {column} ELSE CASE lower({column}) {mapped} ELSE 'related_to' END END"
    return relation, f"coalesce(lower({column}) IN ({backwards}), false)"


_RELATION, _BACKWARDS = _ontology("payload->>'relation'")


TABLES = """
CREATE TABLE remembered (
    event_id VARCHAR PRIMARY KEY, project VARCHAR, ts TIMESTAMPTZ, text VARCHAR, tags VARCHAR[],
    category VARCHAR, outcome VARCHAR, agent VARCHAR, scope VARCHAR
);
CREATE TABLE claude_memories (  -- Claude Code's own memory files, a section a row, each reading kept
    event_id VARCHAR PRIMARY KEY, project VARCHAR, ts TIMESTAMPTZ, path VARCHAR, origin VARCHAR,
    digest VARCHAR, heading VARCHAR, text VARCHAR, scope VARCHAR
);
CREATE TABLE entities (
    entity_id VARCHAR PRIMARY KEY, type VARCHAR, name VARCHAR, normalized_name VARCHAR,
    aliases VARCHAR[], properties JSON, first_seen TIMESTAMPTZ, last_seen TIMESTAMPTZ,
    observations BIGINT, updated_by VARCHAR
);
CREATE TABLE facts (            -- each fact as the newest of its events has it
    fact_id VARCHAR PRIMARY KEY,
    source VARCHAR, relation VARCHAR, target VARCHAR, description VARCHAR, confidence DOUBLE,
    memory_type VARCHAR, network VARCHAR, category VARCHAR,
    project VARCHAR,            -- the project it holds in (everywhere, if scope is 'global')
    scope VARCHAR, topic VARCHAR, dimensions JSON, stated_relation VARCHAR,
    valid_at TIMESTAMPTZ,       -- world time: when it became true
    invalid_at TIMESTAMPTZ,     -- world time: when it stopped being true
    created_at TIMESTAMPTZ,     -- system time: when reverie first learned it
    invalidated_at TIMESTAMPTZ, -- system time: when reverie learned it stopped being true
    expired_at TIMESTAMPTZ,     -- system time: when reverie forgot it
    superseded_by VARCHAR,
    reconsolidations BIGINT,
    updated_by VARCHAR,
    duplicate_of VARCHAR        -- forgotten as a duplicate of this fact (light or skill consolidation)
);
CREATE TABLE fact_history (     -- every event about a fact: `facts` and `facts_as_of` are read from it
    event_id VARCHAR PRIMARY KEY, fact_id VARCHAR, kind VARCHAR, ts TIMESTAMPTZ, recorded_at TIMESTAMPTZ,
    source VARCHAR, relation VARCHAR, target VARCHAR, description VARCHAR, confidence DOUBLE,
    memory_type VARCHAR, network VARCHAR, category VARCHAR,
    valid_at TIMESTAMPTZ,
    invalid_at TIMESTAMPTZ,     -- asserted with the fact, or the end a supersession gives it
    superseded_by VARCHAR, reason VARCHAR,
    project VARCHAR, scope VARCHAR, topic VARCHAR, dimensions JSON, stated_relation VARCHAR,
    duplicate_of VARCHAR
);
CREATE TABLE opinions (          -- each opinion as the newest of its events has it
    opinion_id VARCHAR PRIMARY KEY, subject VARCHAR, statement VARCHAR, confidence DOUBLE,
    formed_at TIMESTAMPTZ, revised_at TIMESTAMPTZ, revisions BIGINT, updated_by VARCHAR,
    project VARCHAR, scope VARCHAR
);
CREATE TABLE opinion_history (  -- newest: the last recorded (a revision's id is of its causes' time)
    event_id VARCHAR PRIMARY KEY, opinion_id VARCHAR, kind VARCHAR, ts TIMESTAMPTZ,
    subject VARCHAR, statement VARCHAR, confidence DOUBLE, reason VARCHAR, project VARCHAR, scope VARCHAR,
    recorded_at TIMESTAMPTZ
);
CREATE TABLE observations (
    observation_id VARCHAR PRIMARY KEY, statement VARCHAR, about VARCHAR[], confidence DOUBLE,
    formed_at TIMESTAMPTZ, updated_by VARCHAR, project VARCHAR, scope VARCHAR
);
CREATE TABLE observation_promotions (  -- the user's: observations chosen for CLAUDE.md's section
    observation_id VARCHAR PRIMARY KEY, promoted BOOLEAN, ts TIMESTAMPTZ, source VARCHAR, updated_by VARCHAR
);
CREATE TABLE approvals (  -- the user's: memories approved (or refused) for CLAUDE.md's section
    memory_id VARCHAR PRIMARY KEY, approved BOOLEAN, ts TIMESTAMPTZ, source VARCHAR, updated_by VARCHAR
);
"""

FOLDS: list[tuple[str, str]] = [
    (
        "remembered",
        f"""
        INSERT INTO remembered SELECT id, project, ts, payload->>'text', {json_list("tags")},
            payload->>'category', payload->>'outcome', payload->>'agent', coalesce(payload->>'scope', 'project')
        FROM batch WHERE kind = '{kinds.MEMORY_REMEMBERED}'
        """,
    ),
    (
        "claude_memories",
        f"""
        INSERT INTO claude_memories SELECT id, project, ts, payload->>'path', payload->>'origin',
            payload->>'digest', coalesce(payload->>'heading', ''), coalesce(payload->>'text', ''),
            coalesce(payload->>'scope', 'project')
        FROM batch WHERE kind = '{kinds.CLAUDE_MEMORY_READ}'
        """,
    ),
    (
        "entities",
        f"""
        INSERT INTO entities
        SELECT payload->>'entity_id',
            arg_max(payload->>'type', id), arg_max(payload->>'name', id), arg_max(payload->>'normalized_name', id),
            list_sort(list_distinct(flatten(list({json_list("aliases")})))),
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
        SELECT id, payload->>'fact_id', kind, ts, recorded_at,
            CASE WHEN {_BACKWARDS} THEN payload->>'target' ELSE payload->>'source' END,
            CASE WHEN kind = '{kinds.FACT_ASSERTED}' THEN {_RELATION} END,
            CASE WHEN {_BACKWARDS} THEN payload->>'source' ELSE payload->>'target' END,
            payload->>'description', TRY_CAST(payload->>'confidence' AS DOUBLE),
            payload->>'memory_type', payload->>'network', payload->>'category',
            TRY_CAST(payload->>'valid_at' AS TIMESTAMPTZ),
            CASE kind WHEN '{kinds.FACT_SUPERSEDED}' THEN coalesce(TRY_CAST(payload->>'invalid_at' AS TIMESTAMPTZ), ts)
                ELSE TRY_CAST(payload->>'invalid_at' AS TIMESTAMPTZ) END,
            payload->>'by_fact_id', payload->>'reason',
            project, payload->>'scope', payload->>'topic', payload->'dimensions',
            coalesce(payload->>'stated_relation',
                CASE WHEN {_RELATION} <> payload->>'relation' THEN payload->>'relation' END),
            payload->>'duplicate_of'
        FROM batch WHERE kind IN ({_FACT_KINDS})
        """,
    ),
    (
        # every fact an event of this batch touched, as its whole history now says
        "facts",
        f"""
        INSERT OR REPLACE INTO facts
        SELECT fact_id, {
            _FACT_STATE
        }, invalidated_at, expired_at, superseded_by, reconsolidations, updated_by,
            duplicate_of
        FROM ({
            _fact_state(
                f"(SELECT * FROM fact_history WHERE fact_id IN "
                f"(SELECT payload->>'fact_id' FROM batch WHERE kind IN ({_FACT_KINDS})))"
            )
        })
        """,
    ),
    (
        "opinion_history",
        f"""
        INSERT INTO opinion_history
        SELECT id, payload->>'opinion_id', kind, ts, payload->>'subject', payload->>'statement',
            TRY_CAST(payload->>'confidence' AS DOUBLE), payload->>'reason', project, payload->>'scope',
            recorded_at
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
            arg_max(statement, {{'known': recorded_at, 'id': event_id}}),
            arg_max(confidence, {{'known': recorded_at, 'id': event_id}}),
            min(ts) FILTER (kind = '{kinds.OPINION_FORMED}'),
            max(ts) FILTER (kind = '{kinds.OPINION_REVISED}'),
            count(*) FILTER (kind = '{kinds.OPINION_REVISED}'),
            max(event_id),
            arg_max(project, event_id) FILTER (kind = '{kinds.OPINION_FORMED}'),
            coalesce(arg_max(scope, event_id) FILTER (kind = '{kinds.OPINION_FORMED}'), 'project')
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
        SELECT k, payload->>'statement', {json_list("about")}, coalesce(TRY_CAST(payload->>'confidence' AS DOUBLE), 1.0),
            ts, id, project, coalesce(payload->>'scope', 'project')
        FROM {latest(kinds.OBSERVATION_FORMED, "observation_id")}
        ON CONFLICT (observation_id) DO UPDATE SET statement = excluded.statement, about = excluded.about,
            confidence = excluded.confidence, formed_at = excluded.formed_at, updated_by = excluded.updated_by,
            project = excluded.project, scope = excluded.scope
        WHERE excluded.updated_by > observations.updated_by
        """,
    ),
    (
        "observation_promotions",
        newest_choice("observation_promotions", kinds.OBSERVATION_PROMOTED, "observation_id", "promoted"),
    ),
    ("approvals", newest_choice("approvals", kinds.MEMORY_APPROVED, "memory_id", "approved")),
]


def current(alias: str = "") -> str:
    """What a current fact is, the one definition every reader uses (recall, the graph walk,
    the lifecycle, extraction's settling, communities, the view facts_current): believed now
    (valid from before now, not ended), not superseded, not forgotten. SQL over the facts
    table's columns, `alias`-qualified."""
    a = f"{alias}." if alias else ""
    return (
        f"{a}expired_at IS NULL AND {a}superseded_by IS NULL AND ({a}invalid_at IS NULL OR {a}invalid_at > now())"
        f" AND ({a}valid_at IS NULL OR {a}valid_at <= now())"
    )


# What is believed true now (see `current`).
FACTS_CURRENT = f"CREATE VIEW facts_current AS SELECT * FROM facts WHERE {current()};"

# Bi-temporal time travel: the facts true at `valid_time`, as reverie knew them at `known_time`
# (their state from the fact events recorded by then: a supersession, a rewording or a
# forgetting learned later is not known yet).
FACTS_AS_OF = f"""
CREATE MACRO facts_as_of(valid_time, known_time) AS TABLE
SELECT fact_id, {_FACT_STATE}
FROM ({_fact_state("(SELECT * FROM fact_history WHERE recorded_at <= known_time)")})
WHERE expired_at IS NULL AND valid_at <= valid_time AND (invalid_at IS NULL OR invalid_at > valid_time)
"""
