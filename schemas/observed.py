"""The payloads of the observed kinds: what Claude Code's hooks, the import and reverie's own
front doors record, as msgspec Structs.

They tolerate what real hooks send across CLI versions: unknown fields are ignored, missing
ones take defaults, and `null` is accepted wherever a CLI has been seen to send it.
"""

from typing import Any, Literal

import msgspec

from schemas.categories import Outcome, RememberedCategory
from schemas.memory import Category, Network, Scope
from schemas.ontology import MemoryType, Relation
from schemas.recall import Given


class HookPayload(msgspec.Struct, kw_only=True):
    """Fields every Claude Code hook payload carries (some only in newer CLIs)."""

    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    permission_mode: str | None = None
    agent_id: str | None = None
    agent_type: str | None = None


class SessionStarted(HookPayload, kw_only=True):
    source: str | None = None  # startup, resume, clear, compact
    model: str | None = None


class SessionEnded(HookPayload, kw_only=True):
    reason: str | None = None


class PromptSubmitted(HookPayload, kw_only=True):
    prompt: str | None = None


class ToolRequested(HookPayload, kw_only=True):
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None


class ToolUsed(ToolRequested, kw_only=True):
    tool_response: Any = None


class ToolFailed(ToolRequested, kw_only=True):
    error: Any = None
    is_interrupt: bool | None = None


class PermissionRequested(ToolRequested, kw_only=True):
    permission_suggestions: list[Any] | None = None


class AssistantStopped(HookPayload, kw_only=True):
    stop_hook_active: bool | None = None
    last_assistant_message: str | None = None


class AssistantSaid(HookPayload, kw_only=True):
    """What the agent (or a subagent) wrote mid-turn, as its transcript holds it: one text block."""

    text: str | None = None


class SubagentStarted(HookPayload, kw_only=True):
    pass


class SubagentStopped(AssistantStopped, kw_only=True):
    agent_transcript_path: str | None = None


class CompactionStarted(HookPayload, kw_only=True):
    trigger: str | None = None  # manual, auto
    custom_instructions: str | None = None


class CompactionFinished(HookPayload, kw_only=True):
    trigger: str | None = None
    compact_summary: str | None = None


class Notification(HookPayload, kw_only=True):
    message: str | None = None
    title: str | None = None
    notification_type: str | None = None


class MemoryRemembered(msgspec.Struct, kw_only=True):
    """Something the user or agent asked reverie to remember, explicitly: about `category`
    (schemas/categories.py), a way that worked or, `failed`, an anti-pattern; an agent's own
    (`agent`: a subagent's type, injected when one starts) or everyone's; for this project or,
    `global`, for every project."""

    text: str
    tags: list[str] = []
    category: RememberedCategory | None = None
    outcome: Outcome | None = None
    agent: str | None = None
    scope: Literal["project", "global"] = "project"


class SessionStashed(msgspec.Struct, kw_only=True):
    """Where a session stands, kept under `name` to pick up later (`reverie stash`): its goal,
    the decisions it made, the threads it left open and the next steps; `worded_by` the LLM
    that worded it, or None when read from the session's own events."""

    name: str
    session_id: str | None = None
    goal: str | None = None
    decisions: list[str] = []
    open_threads: list[str] = []
    next_steps: list[str] = []
    files: list[str] = []
    worded_by: str | None = None


class MemoryForgotten(msgspec.Struct, kw_only=True):
    """The user or agent asked reverie to forget a memory (any id recall returns): it is hidden
    from recall from then on, and nothing is deleted."""

    memory_id: str
    reason: str


class PreferencePinned(msgspec.Struct, kw_only=True):
    """The user pinned a preference (every new session is told it first, whatever its
    strength), or unpinned it (`pinned` false: it is weighed as any other again)."""

    preference_id: str
    pinned: bool = True


class ObservationPromoted(msgspec.Struct, kw_only=True):
    """The user chose an observation for CLAUDE.md's memory section (`promoted` false: took it
    back); what writes the section reads the newest choice."""

    observation_id: str
    promoted: bool = True


class MemoryApproved(msgspec.Struct, kw_only=True):
    """The user approved a memory for CLAUDE.md's memory section (`approved` false: refused it,
    or took the approval back): one that would enter only with their yes (what the agent
    remembered on its own, what came from an import, a stated preference...: see
    projections/curation.py). What writes the section reads the newest choice."""

    memory_id: str
    approved: bool = True


class FactCorrected(msgspec.Struct, kw_only=True):
    """The user said the fact `fact_id` is wrong and `text` says what holds instead. It carries
    what the wrong fact was about (its subject, relation, object, where it goes, its scope), its
    newest event (`updated_by`) and the user's prompts that stated it (`stated_in`), so the fact
    that holds now is derived from this event alone (workers/extraction/derive.py), on any
    machine, and the wrong one is forgotten at once."""

    fact_id: str
    text: str
    source: str  # the wrong fact's subject (an entity id)
    relation: Relation
    target: str | None = None
    category: Category = "context"
    memory_type: MemoryType = "semantic"
    network: Network = "world"
    scope: Scope = "project"
    updated_by: str  # the wrong fact's newest event: the correction comes after it
    # the prompts whose words stated the wrong fact (extraction read it in them): they say it no more
    stated_in: list[str] = []


# Which of Claude Code's memory files: the project's CLAUDE.md (or .claude/CLAUDE.md), its
# CLAUDE.local.md, its .claude/rules; the user's ~/.claude/CLAUDE.md and ~/.claude/rules; the
# project's auto memory (MEMORY.md and its topic files)
ClaudeMemoryOrigin = Literal["project", "local", "rules", "user", "user-rules", "auto-memory"]


class ClaudeMemoryRead(msgspec.Struct, kw_only=True):
    """A section of a file Claude Code loads as its own memory, as reverie read it
    (ingest/claude_memory.py). The file's newest reading holds: the sections read with its
    `digest` are what it says now, and those of an older reading are no longer shown. A reading
    of a file with nothing to import, or gone (`digest` empty), is one event with no text."""

    path: str
    origin: ClaudeMemoryOrigin
    digest: str  # of the file's bytes, as read
    heading: str = ""  # the headings the section is under, " > " between them
    text: str = ""
    scope: Literal["project", "global"] = "project"  # global: the user's, for every project


class MemoryRetrieved(msgspec.Struct, kw_only=True):
    """A recall and what it returned, in rank order; for the hook's, why each was given."""

    query: str
    results: list[str] = []
    scores: list[float] = []
    given: list[Given] = []


class ProjectIdentified(msgspec.Struct, kw_only=True):
    """The folder `root` (a worktree's root, or a path events were recorded under) belongs to
    `project` (ingest/project.py): the projector folds what was recorded under `root` as
    `project`'s. The newest identification of a root holds."""

    root: str
    project: str
