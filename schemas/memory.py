"""What memory is made of: the payloads of derived events and the vocabularies they use.

Workers that think (extraction, signal tracking, promotion, dream consolidation, forgetting,
reflection) never write tables: they append these events, each with `caused_by` naming the
events it came from, and the projector folds them. So every memory can say why it is
believed, and a replay rebuilds memory without thinking again.

Identifiers (`entity_id`, `fact_id`, ...) are chosen by the worker that first makes the thing
(an event id is a good choice); later events refer to them.
"""

import hashlib
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from schemas.ontology import MemoryType, Relation, Topic

# Hindsight's four networks: facts about the world, what the agent went through, what it
# believes (with a confidence), and what it concluded by looking at the rest.
Network = Literal["world", "experience", "opinion", "observation"]
# Where a memory goes when the context budget is shared out.
Category = Literal["stack", "context", "decisions", "errors", "patterns"]
# HORA's 10 entity types, Memory Fabric's agent, technology and anti_pattern, and the commands
# a session runs. Relations, and the rules that type a fact: schemas/ontology.py.
EntityType = Literal[
    "project", "tool", "error_pattern", "preference", "concept", "person", "file", "library", "pattern",
    "decision", "agent", "technology", "anti_pattern", "command",
]  # fmt: skip
# Every memory belongs to its event's project, unless it holds everywhere.
Scope = Literal["project", "global"]
Outcome = Literal["success", "failure", "partial", "unknown"]
Tier = Literal["working", "short_term", "long_term", "archived"]
Confidence = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Sentiment = Annotated[float, msgspec.Meta(ge=-1.0, le=1.0)]


class EntityObserved(msgspec.Struct, kw_only=True):
    entity_id: str
    type: EntityType
    name: str
    normalized_name: str
    aliases: list[str] = []
    properties: dict[str, Any] = {}


class Dimensions(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Hindsight's five dimensions of a fact, where known."""

    what: str | None = None
    when: str | None = None
    where: str | None = None
    who: str | None = None
    why: str | None = None


def fact_id(project: str, *said: str) -> str:
    """A fact's id: the same statement in the same project is one fact."""
    digest = hashlib.blake2b("\0".join([project, *said]).lower().encode(), digest_size=10).hexdigest()
    return f"fact:{digest}"


def corrected_fact_id(project: str, wrong: str, text: str) -> str:
    """The id of the fact that holds where the user corrected the fact `wrong` in the words `text`."""
    return fact_id(project, "corrected", wrong, text)


class FactAsserted(msgspec.Struct, kw_only=True):
    """A statement believed true from `valid_at` (until `invalid_at`, if known), in the event's
    project (or everywhere, if `scope` is global)."""

    fact_id: str
    source: str  # entity_id
    relation: Relation
    target: str | None = None  # entity_id
    description: str
    confidence: Confidence = 1.0
    memory_type: MemoryType = "semantic"
    network: Network = "world"
    category: Category = "context"
    topic: Topic | None = None
    dimensions: Dimensions = Dimensions()
    stated_relation: str | None = None  # the relation as stated, where the ontology's differs
    scope: Scope = "project"
    valid_at: datetime | None = None
    invalid_at: datetime | None = None


class FactSuperseded(msgspec.Struct, kw_only=True):
    """The fact stopped being true (at `invalid_at`): `by_fact_id` says what is true now."""

    fact_id: str
    by_fact_id: str | None = None
    invalid_at: datetime | None = None
    reason: str = ""


class FactReconsolidated(msgspec.Struct, kw_only=True):
    """Recalled and rewritten: a new wording or confidence for the same fact."""

    fact_id: str
    description: str | None = None
    confidence: Confidence | None = None
    reason: str = ""


class FactExpired(msgspec.Struct, kw_only=True):
    """Forgotten: no longer recalled (the fact's history stays in the log, and `facts_as_of`
    still finds it before then)."""

    fact_id: str
    reason: str = ""
    duplicate_of: str | None = None  # the fact it repeats word for word, which stands for it


class MemorySuperseded(msgspec.Struct, kw_only=True):
    """A memory that is no fact no longer holds: `by_memory_id` says what does now. A remembered
    memory updated by a newer one (the same words about the same subject, a changed value:
    workers/extraction/updates.py), or the prompt that stated a fact the user corrected. It
    leaves recall where it held (folded with what was forgotten); the log keeps it."""

    memory_id: str
    by_memory_id: str
    reason: str = ""


class EpisodeRecorded(msgspec.Struct, kw_only=True):
    episode_id: str
    session_id: str | None = None
    title: str
    summary: str
    started_at: datetime
    ended_at: datetime | None = None
    outcome: Outcome = "unknown"
    entities: list[str] = []
    emotional_weight: float = 1.0


class SessionIdled(msgspec.Struct, kw_only=True):
    """A session whose last event is older than the idle time and that never said it ended:
    taken for ended, as of `last_event_at`, so its episode, signals and failures are drawn
    (again, if it had gone idle before and resumed)."""

    session_id: str
    last_event_at: datetime  # its last event, as the snapshot had it when it was found idle
    idle_minutes: float  # the idle time it was found idle by (REVERIE_SESSION_IDLE_MINUTES)


class EpisodeConsolidated(msgspec.Struct, kw_only=True):
    """Episodes merged by a dream cycle into one that stands for them."""

    episode_id: str
    from_episodes: list[str]
    title: str
    summary: str


class SignalDetected(msgspec.Struct, kw_only=True):
    signal_id: str
    # mood: a session's, its prompts' mean frustration (workers/dynamics/signals.py) as `sentiment`
    signal: Literal[
        "correction", "preference", "principle", "frustration", "mood", "praise", "confusion", "decision"
    ]
    text: str
    subject: str | None = None  # entity_id
    sentiment: Sentiment = 0.0


class PreferenceCrystallized(msgspec.Struct, kw_only=True):
    """A preference that recurred often enough to hold."""

    preference_id: str
    subject: str | None = None  # entity_id
    statement: str
    strength: Confidence
    evidence: int  # how many signals support it
    scope: Scope = "project"


class FailureRecurring(msgspec.Struct, kw_only=True):
    failure_id: str
    signature: str  # what identifies the failure across occurrences
    occurrences: int
    example: str
    last_seen: datetime


class TierPromoted(msgspec.Struct, kw_only=True):
    memory_id: str
    from_tier: Tier
    to_tier: Tier
    reason: str = ""


class ActivationRecorded(msgspec.Struct, kw_only=True):
    """A memory was used: the input of ACT-R base-level activation and FSRS stability."""

    memory_id: str
    at: datetime
    # used, unused, failed: what the agent did with what a recall at `at` gave it
    # (workers/dynamics/decay.py): a use strengthens, a contradiction weakens, the rest is neutral
    cause: Literal["retrieved", "used", "unused", "failed", "reinforced", "co_retrieved"] = "retrieved"
    weight: float = 1.0


class CommunityDetected(msgspec.Struct, kw_only=True):
    """A community of entities, as label propagation last found it (no members: dissolved)."""

    community_id: str
    members: list[str]  # entity_ids
    label: str = ""  # its hub's name
    hub: str | None = None  # the member with the most connections
    facts: list[str] = []  # the facts between its members


class OpinionFormed(msgspec.Struct, kw_only=True):
    opinion_id: str
    subject: str | None = None  # entity_id
    statement: str
    confidence: Confidence
    scope: Scope = "project"


class OpinionRevised(msgspec.Struct, kw_only=True):
    opinion_id: str
    statement: str | None = None
    confidence: Confidence | None = None
    reason: str = ""


class ObservationFormed(msgspec.Struct, kw_only=True):
    observation_id: str
    statement: str
    about: list[str] = []  # entity_ids
    confidence: Confidence = 1.0
    scope: Scope = "project"
