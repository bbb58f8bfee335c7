"""Event kinds, and which Claude Code hook event each observed kind comes from."""

SESSION_STARTED = "session.started"
SESSION_ENDED = "session.ended"
PROMPT_SUBMITTED = "prompt.submitted"
TOOL_REQUESTED = "tool.requested"
TOOL_USED = "tool.used"
TOOL_FAILED = "tool.failed"
PERMISSION_REQUESTED = "permission.requested"
ASSISTANT_STOPPED = "assistant.stopped"
# a text block the agent wrote before its turn's last words, read from its transcript
ASSISTANT_SAID = "assistant.said"
SUBAGENT_STARTED = "subagent.started"
SUBAGENT_STOPPED = "subagent.stopped"
COMPACTION_STARTED = "compaction.started"
COMPACTION_FINISHED = "compaction.finished"
NOTIFICATION = "notification"
MEMORY_REMEMBERED = "memory.remembered"
MEMORY_RETRIEVED = "memory.retrieved"
MEMORY_FORGOTTEN = "memory.forgotten"
PREFERENCE_PINNED = "preference.pinned"
OBSERVATION_PROMOTED = "observation.promoted"
# the user approved a memory for CLAUDE.md's memory section (or took the approval back)
MEMORY_APPROVED = "memory.approved"
# the user said a fact is wrong and what holds instead
FACT_CORRECTED = "fact.corrected"
SESSION_STASHED = "session.stashed"
# a root path found to be (a worktree of) a project: what was recorded under the path moves there
PROJECT_IDENTIFIED = "project.identified"
# a section of a file Claude Code loads as its own memory (CLAUDE.md, rules, auto memory), as read
CLAUDE_MEMORY_READ = "claude_memory.read"

# Derived kinds: appended by the workers that think, from the events in `caused_by`.
ENTITY_OBSERVED = "entity.observed"
FACT_ASSERTED = "fact.asserted"
FACT_SUPERSEDED = "fact.superseded"
FACT_RECONSOLIDATED = "fact.reconsolidated"
FACT_EXPIRED = "fact.expired"
# a memory (something remembered, a prompt) another one replaces: it leaves recall, kept in the log
MEMORY_SUPERSEDED = "memory.superseded"
EPISODE_RECORDED = "episode.recorded"
EPISODE_CONSOLIDATED = "episode.consolidated"
SIGNAL_DETECTED = "signal.detected"
PREFERENCE_CRYSTALLIZED = "preference.crystallized"
FAILURE_RECURRING = "failure.recurring"
TIER_PROMOTED = "tier.promoted"
ACTIVATION_RECORDED = "activation.recorded"
COMMUNITY_DETECTED = "community.detected"
OPINION_FORMED = "opinion.formed"
OPINION_REVISED = "opinion.revised"
OBSERVATION_FORMED = "observation.formed"
LLM_USED = "llm.used"
# a session no event has come from for the idle time, taken for ended (workers/dynamics/idle.py)
SESSION_IDLED = "session.idled"

# Claude Code's hook_event_name -> the kind of event it records.
HOOK_KINDS: dict[str, str] = {
    "SessionStart": SESSION_STARTED,
    "SessionEnd": SESSION_ENDED,
    "UserPromptSubmit": PROMPT_SUBMITTED,
    "PreToolUse": TOOL_REQUESTED,
    "PostToolUse": TOOL_USED,
    "PostToolUseFailure": TOOL_FAILED,
    "PermissionRequest": PERMISSION_REQUESTED,
    "Stop": ASSISTANT_STOPPED,
    "SubagentStart": SUBAGENT_STARTED,
    "SubagentStop": SUBAGENT_STOPPED,
    "PreCompact": COMPACTION_STARTED,
    "PostCompact": COMPACTION_FINISHED,
    "Notification": NOTIFICATION,
}

# Claude Code reads at most this many characters of a hook's additionalContext.
HOOK_CONTEXT_LIMIT = 10_000

# Where an event came from (the envelope's `source`).
SOURCE_CLAUDE_CODE = "claude-code"
SOURCE_IMPORT = "import"
# events of a `reverie export json` file, another machine's or a teammate's (`reverie import-json`)
SOURCE_IMPORT_JSON = "import-json"
SOURCE_CLI = "cli"
SOURCE_MCP = "mcp"
SOURCE_WORKER = "worker"
SOURCE_DASHBOARD = "dashboard"
# Claude Code's own memory files, read by reverie (ingest/claude_memory.py)
SOURCE_CLAUDE_MEMORY = "claude-memory"

# 2: facts name relations of the ontology (schemas/ontology.py), and carry their scope, topic
# and dimensions; the folds read v1's relations into the ontology.
SCHEMA_VERSION = 2
