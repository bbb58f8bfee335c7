"""The registry of event kinds and of memory tables.

A kind: its payload Struct, whether it is observed or derived, the family of folds that
projects it, and for a derived kind its subject, the payload field naming what it is about
(provenance's subject: how `reverie why` finds the events about a memory).

A memory table: a projection table whose rows are memories recall shows (the view memory_texts,
projections/analytics.sql), with its id, text and scope columns and the kinds that make it. What
reads every memory (the provenance fold, the events behind a memory, `reverie sql --help`...)
is generated from these, so none is left out.

Adding a kind is its name (schemas/kinds.py, where the hook finds the observed ones), its
payload Struct (schemas/observed.py for what is observed, schemas/memory.py for what the workers
that think derive), one line below, and one fold in its family (projections/folds/<family>.py).
Adding a memory table is its fold, its line in memory_texts and one line below. A test checks
that the registry, the names, the folds and what is generated agree.
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


# What `reverie import-json` does with a kind's events, which come from another machine's file
# (reverie/exporting.py): "data", what was observed there, lands; "decision", a user's choice
# (remember, forget, pin, promote, approve, correct), lands only when the importing user says so;
# "never", what the workers derive (this stack's derive it again from the data) and what is about
# the other machine's own disk (which of its folders is which project).
Imported = Literal["data", "decision", "never"]


class Kind(msgspec.Struct, frozen=True):
    name: str
    payload: type[msgspec.Struct]
    derived: bool  # appended by a worker that thinks, from the events in its `caused_by`
    family: Family
    subject: str | None = None  # a derived kind's: the payload field naming what it is about
    imported: Imported = "data"


def _observed(name: str, payload: type[msgspec.Struct], family: Family, imported: Imported = "data") -> Kind:
    return Kind(name, payload, False, family, imported=imported)


def _decision(name: str, payload: type[msgspec.Struct], family: Family) -> Kind:
    """A choice the user made by hand: recorded as observed, imported only when asked."""
    return _observed(name, payload, family, "decision")


def _derived(name: str, payload: type[msgspec.Struct], family: Family, subject: str | None) -> Kind:
    """`subject` None: about nothing that has an id (what an LLM call cost)."""
    return Kind(name, payload, True, family, subject, "never")


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        _observed(kinds.SESSION_STARTED, observed.SessionStarted, "sessions"),
        _observed(kinds.SESSION_ENDED, observed.SessionEnded, "sessions"),
        _observed(kinds.PROMPT_SUBMITTED, observed.PromptSubmitted, "sessions"),
        _observed(kinds.ASSISTANT_STOPPED, observed.AssistantStopped, "sessions"),
        _observed(kinds.ASSISTANT_SAID, observed.AssistantSaid, "tools"),
        _observed(kinds.SUBAGENT_STARTED, observed.SubagentStarted, "sessions"),
        _observed(kinds.SUBAGENT_STOPPED, observed.SubagentStopped, "sessions"),
        _observed(kinds.COMPACTION_STARTED, observed.CompactionStarted, "sessions"),
        _observed(kinds.COMPACTION_FINISHED, observed.CompactionFinished, "sessions"),
        _observed(kinds.NOTIFICATION, observed.Notification, "sessions"),
        _observed(kinds.TOOL_REQUESTED, observed.ToolRequested, "tools"),
        _observed(kinds.TOOL_USED, observed.ToolUsed, "tools"),
        _observed(kinds.TOOL_FAILED, observed.ToolFailed, "tools"),
        _observed(kinds.PERMISSION_REQUESTED, observed.PermissionRequested, "tools"),
        _decision(kinds.MEMORY_REMEMBERED, observed.MemoryRemembered, "facts"),
        _observed(kinds.MEMORY_RETRIEVED, observed.MemoryRetrieved, "dynamics"),
        _decision(kinds.MEMORY_FORGOTTEN, observed.MemoryForgotten, "dynamics"),
        _decision(kinds.PREFERENCE_PINNED, observed.PreferencePinned, "signals"),
        _decision(kinds.OBSERVATION_PROMOTED, observed.ObservationPromoted, "facts"),
        _decision(kinds.MEMORY_APPROVED, observed.MemoryApproved, "facts"),
        _decision(kinds.FACT_CORRECTED, observed.FactCorrected, "facts"),
        _observed(kinds.SESSION_STASHED, observed.SessionStashed, "episodes"),
        _observed(kinds.PROJECT_IDENTIFIED, observed.ProjectIdentified, "sessions", "never"),
        _observed(kinds.CLAUDE_MEMORY_READ, observed.ClaudeMemoryRead, "facts"),
        _derived(kinds.ENTITY_OBSERVED, memory.EntityObserved, "facts", "entity_id"),
        _derived(kinds.FACT_ASSERTED, memory.FactAsserted, "facts", "fact_id"),
        _derived(kinds.FACT_SUPERSEDED, memory.FactSuperseded, "facts", "fact_id"),
        _derived(kinds.FACT_RECONSOLIDATED, memory.FactReconsolidated, "facts", "fact_id"),
        _derived(kinds.FACT_EXPIRED, memory.FactExpired, "facts", "fact_id"),
        _derived(kinds.MEMORY_SUPERSEDED, memory.MemorySuperseded, "dynamics", "memory_id"),
        _derived(kinds.OPINION_FORMED, memory.OpinionFormed, "facts", "opinion_id"),
        _derived(kinds.OPINION_REVISED, memory.OpinionRevised, "facts", "opinion_id"),
        _derived(kinds.OBSERVATION_FORMED, memory.ObservationFormed, "facts", "observation_id"),
        _derived(kinds.EPISODE_RECORDED, memory.EpisodeRecorded, "episodes", "episode_id"),
        _derived(kinds.EPISODE_CONSOLIDATED, memory.EpisodeConsolidated, "episodes", "episode_id"),
        _derived(kinds.SIGNAL_DETECTED, memory.SignalDetected, "signals", "signal_id"),
        _derived(kinds.PREFERENCE_CRYSTALLIZED, memory.PreferenceCrystallized, "signals", "preference_id"),
        _derived(kinds.FAILURE_RECURRING, memory.FailureRecurring, "signals", "failure_id"),
        _derived(kinds.ACTIVATION_RECORDED, memory.ActivationRecorded, "dynamics", "memory_id"),
        _derived(kinds.TIER_PROMOTED, memory.TierPromoted, "dynamics", "memory_id"),
        _derived(kinds.COMMUNITY_DETECTED, memory.CommunityDetected, "dynamics", "community_id"),
        _derived(kinds.LLM_USED, llm.LLMUsed, "costs", None),
        _derived(kinds.SESSION_IDLED, memory.SessionIdled, "sessions", "session_id"),
    )
}
DERIVED_KINDS = frozenset(name for name, kind in KINDS.items() if kind.derived)
# what changes no memory's text, scope or presence: a recall, the activation it records, what an
# LLM call cost, a session taken for ended; a batch of these alone leaves the vectors as they
# were (projections/embedder.py)
TEXTLESS_KINDS = frozenset(
    {kinds.MEMORY_RETRIEVED, kinds.ACTIVATION_RECORDED, kinds.LLM_USED, kinds.SESSION_IDLED}
)
# what the work did (prompts, tools, sessions, what the user asked to remember), which the
# thinking workers learn from; not memory's own doings (a recall, a forgetting)
WORK_KINDS = frozenset(name for name, kind in KINDS.items() if not kind.derived and kind.family != "dynamics")
# the payload fields derived events name their subject by, each once, in the registry's order
SUBJECTS: tuple[str, ...] = tuple(dict.fromkeys(k.subject for k in KINDS.values() if k.derived and k.subject))


class MemoryTable(msgspec.Struct, frozen=True):
    """A projection table of memories recall shows (see the module's docstring)."""

    name: str
    id: str  # a memory's id: its derived kinds' subject, or the observed event that is the memory
    text: str  # what says it (an episode's title, its summary following; a prompt's words, cleaned)
    scope: str | None  # where it holds: its project, or everywhere ('global'); None: its project
    made_by: tuple[str, ...]  # the kinds whose events make its rows
    # an observed table whose rows are not each one event (a passage, however often it was shown):
    # the column naming the event that first recorded each
    first_event: str | None = None

    @property
    def derived(self) -> bool:
        """Made by workers that think: `updated_by` names the newest event that changed a row."""
        return all(KINDS[kind].derived for kind in self.made_by)


_FACT_KINDS = (kinds.FACT_ASSERTED, kinds.FACT_SUPERSEDED, kinds.FACT_RECONSOLIDATED, kinds.FACT_EXPIRED)


def _memories(name: str, id_: str, text: str, scope: str | None, *made_by: str) -> MemoryTable:
    return MemoryTable(name, id_, text, scope, made_by)


MEMORY_TABLES: dict[str, MemoryTable] = {
    table.name: table
    for table in (  # table, id, text and scope columns, the kinds that make it
        _memories("prompts", "event_id", "clean", None, kinds.PROMPT_SUBMITTED),
        _memories("messages", "event_id", "clean", None, kinds.ASSISTANT_STOPPED, kinds.SUBAGENT_STOPPED),
        _memories(
            "compactions", "event_id", "summary", None, kinds.COMPACTION_STARTED, kinds.COMPACTION_FINISHED
        ),
        _memories("remembered", "event_id", "text", "scope", kinds.MEMORY_REMEMBERED),
        _memories("facts", "fact_id", "description", "scope", *_FACT_KINDS),
        _memories(
            "episodes", "episode_id", "title", None, kinds.EPISODE_RECORDED, kinds.EPISODE_CONSOLIDATED
        ),
        _memories("observations", "observation_id", "statement", "scope", kinds.OBSERVATION_FORMED),
        _memories(
            "opinions", "opinion_id", "statement", "scope", kinds.OPINION_FORMED, kinds.OPINION_REVISED
        ),
        _memories("preferences", "preference_id", "statement", "scope", kinds.PREFERENCE_CRYSTALLIZED),
        _memories("claude_memories", "event_id", "text", "scope", kinds.CLAUDE_MEMORY_READ),
        MemoryTable(
            "passages",
            "passage_id",
            "text",
            None,
            (kinds.TOOL_USED, kinds.TOOL_FAILED, kinds.ASSISTANT_SAID),
            "event_id",
        ),
    )
}


def of_family(family: Family) -> list[str]:
    """The kinds `family`'s folds project."""
    return [name for name, kind in KINDS.items() if kind.family == family]
