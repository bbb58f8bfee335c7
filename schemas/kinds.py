"""Event kinds, and which Claude Code hook event each observed kind comes from."""

SESSION_STARTED = "session.started"
SESSION_ENDED = "session.ended"
PROMPT_SUBMITTED = "prompt.submitted"
TOOL_REQUESTED = "tool.requested"
TOOL_USED = "tool.used"
TOOL_FAILED = "tool.failed"
PERMISSION_REQUESTED = "permission.requested"
ASSISTANT_STOPPED = "assistant.stopped"
SUBAGENT_STARTED = "subagent.started"
SUBAGENT_STOPPED = "subagent.stopped"
COMPACTION_STARTED = "compaction.started"
COMPACTION_FINISHED = "compaction.finished"
NOTIFICATION = "notification"
MEMORY_REMEMBERED = "memory.remembered"
MEMORY_RETRIEVED = "memory.retrieved"

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

# Where an event came from (the envelope's `source`).
SOURCE_CLAUDE_CODE = "claude-code"
SOURCE_IMPORT = "import"
SOURCE_CLI = "cli"
SOURCE_MCP = "mcp"
SOURCE_WORKER = "worker"

SCHEMA_VERSION = 1
