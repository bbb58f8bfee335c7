"""The registry of event kinds: each kind's payload Struct, whether it is observed or derived,
and the family of folds that projects it.

Adding a kind is its name (schemas/kinds.py, where the hook finds the observed ones), its
payload Struct (schemas/observed.py for what is observed, schemas/memory.py for what the workers
that think derive), one line below, and one fold in its family (projections/folds/<family>.py).
A test checks that the registry, the names and the folds agree.
"""

from typing import Literal

import msgspec

from schemas import kinds, llm, memory, observed

# The families of folds (projections/folds/): what happened in a session, the tools it used,
# what memory holds as facts and entities (with opinions and observations), episodes, the
# signals and preferences read from behaviour, the dynamics of memory (use, tiers, groups), and
# what the thinking cost (an LLM's tokens).
Family = Literal["sessions", "tools", "facts", "episodes", "signals", "dynamics", "costs"]
FAMILIES: tuple[Family, ...] = ("sessions", "tools", "facts", "episodes", "signals", "dynamics", "costs")


class Kind(msgspec.Struct, frozen=True):
    name: str
    payload: type[msgspec.Struct]
    derived: bool  # appended by a worker that thinks, from the events in its `caused_by`
    family: Family


def _observed(name: str, payload: type[msgspec.Struct], family: Family) -> Kind:
    return Kind(name, payload, False, family)


def _derived(name: str, payload: type[msgspec.Struct], family: Family) -> Kind:
    return Kind(name, payload, True, family)


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        _observed(kinds.SESSION_STARTED, observed.SessionStarted, "sessions"),
        _observed(kinds.SESSION_ENDED, observed.SessionEnded, "sessions"),
        _observed(kinds.PROMPT_SUBMITTED, observed.PromptSubmitted, "sessions"),
        _observed(kinds.ASSISTANT_STOPPED, observed.AssistantStopped, "sessions"),
        _observed(kinds.SUBAGENT_STARTED, observed.SubagentStarted, "sessions"),
        _observed(kinds.SUBAGENT_STOPPED, observed.SubagentStopped, "sessions"),
        _observed(kinds.COMPACTION_STARTED, observed.CompactionStarted, "sessions"),
        _observed(kinds.COMPACTION_FINISHED, observed.CompactionFinished, "sessions"),
        _observed(kinds.NOTIFICATION, observed.Notification, "sessions"),
        _observed(kinds.TOOL_REQUESTED, observed.ToolRequested, "tools"),
        _observed(kinds.TOOL_USED, observed.ToolUsed, "tools"),
        _observed(kinds.TOOL_FAILED, observed.ToolFailed, "tools"),
        _observed(kinds.PERMISSION_REQUESTED, observed.PermissionRequested, "tools"),
        _observed(kinds.MEMORY_REMEMBERED, observed.MemoryRemembered, "facts"),
        _observed(kinds.MEMORY_RETRIEVED, observed.MemoryRetrieved, "dynamics"),
        _observed(kinds.MEMORY_FORGOTTEN, observed.MemoryForgotten, "dynamics"),
        _observed(kinds.PROJECT_IDENTIFIED, observed.ProjectIdentified, "sessions"),
        _derived(kinds.ENTITY_OBSERVED, memory.EntityObserved, "facts"),
        _derived(kinds.FACT_ASSERTED, memory.FactAsserted, "facts"),
        _derived(kinds.FACT_SUPERSEDED, memory.FactSuperseded, "facts"),
        _derived(kinds.FACT_RECONSOLIDATED, memory.FactReconsolidated, "facts"),
        _derived(kinds.FACT_EXPIRED, memory.FactExpired, "facts"),
        _derived(kinds.OPINION_FORMED, memory.OpinionFormed, "facts"),
        _derived(kinds.OPINION_REVISED, memory.OpinionRevised, "facts"),
        _derived(kinds.OBSERVATION_FORMED, memory.ObservationFormed, "facts"),
        _derived(kinds.EPISODE_RECORDED, memory.EpisodeRecorded, "episodes"),
        _derived(kinds.EPISODE_CONSOLIDATED, memory.EpisodeConsolidated, "episodes"),
        _derived(kinds.SIGNAL_DETECTED, memory.SignalDetected, "signals"),
        _derived(kinds.PREFERENCE_CRYSTALLIZED, memory.PreferenceCrystallized, "signals"),
        _derived(kinds.FAILURE_RECURRING, memory.FailureRecurring, "signals"),
        _derived(kinds.ACTIVATION_RECORDED, memory.ActivationRecorded, "dynamics"),
        _derived(kinds.TIER_PROMOTED, memory.TierPromoted, "dynamics"),
        _derived(kinds.COMMUNITY_DETECTED, memory.CommunityDetected, "dynamics"),
        _derived(kinds.LLM_USED, llm.LLMUsed, "costs"),
    )
}
DERIVED_KINDS = frozenset(name for name, kind in KINDS.items() if kind.derived)


def of_family(family: Family) -> list[str]:
    """The kinds `family`'s folds project."""
    return [name for name, kind in KINDS.items() if kind.family == family]
