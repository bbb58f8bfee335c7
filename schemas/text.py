"""What in a session's texts is the user's or the agent's own words, and what is Claude Code's
wrapping: ANSI escapes, `<command-name>`-style wrappers, compaction prompts, interruption
markers.

The patterns are written once, here, for Python's `re` and DuckDB's RE2 alike (no
backreferences, no look-arounds): the extractor cleans with `clean`, `is_noise` and
`harness_kind`, and the projections with the same patterns in SQL (projections/sql.py): what
Claude Code says in the user's turn is folded apart from the user's prompts, as its own kind.
Every pattern is linear in the text.
"""

import re

# Claude Code wraps what a slash command, a local command or the harness adds to a session.
WRAPPERS = (
    "command-name", "command-message", "command-args", "command-contents", "local-command-stdout",
    "local-command-stderr", "local-command-caveat", "system-reminder", "task-notification",
    "bash-input", "bash-stdout", "bash-stderr", "user-prompt-submit-hook",
)  # fmt: skip
WRAPPED = "|".join(rf"<{tag}>[\s\S]*?</{tag}>" for tag in WRAPPERS)
ANSI = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
# What Claude Code itself says in the user's turn, by kind: its compaction request and the
# summary it continues a session with, an interruption marker, the pointer to a background
# task's output, a slash command's caveat, a skill's preamble (read at the start of the text once
# its wrappers are cleaned away); and a turn that is nothing but its wrappers (a task's
# notification, a command's name and output: WRAPPED_ONLY, else "wrapped").
HARNESS: tuple[tuple[str, str], ...] = (
    ("compaction_request", r"^\s*Your task is to create a detailed summary of the conversation"),
    ("compaction_summary", r"^\s*This session is being continued from a previous conversation"),
    ("interruption", r"^\s*\[Request interrupted by user"),
    ("output_pointer", r"^\s*Read the output file to retrieve the result"),
    ("task_notification", r"^\s*<task-notification>"),
    ("command", r"^\s*Caveat: The messages below were generated"),
    ("skill", r"^\s*Base directory for this skill:"),
)
WRAPPED_ONLY: tuple[tuple[str, str], ...] = (
    ("task_notification", r"^\s*<task-notification>"),
    ("command", r"^\s*<(?:command-(?:name|message|args)|local-command-\w+|bash-(?:input|stdout|stderr))>"),
)
# What a tool call that never ran answers: Claude Code cancelled it (a parallel call failed), or
# the user refused or interrupted it. Such a call is no failure of the work.
CANCELLED = (
    r"Sibling tool call errored|User rejected tool use|The user doesn't want to proceed"
    r"|\[Request interrupted by user|Interrupted by user"
)
# Claude Code's summary of a compacted conversation, as its compaction agent answers: an optional
# <analysis> of the conversation, then the <summary> itself (what memory keeps of it)
SUMMARY = r"^\s*(?:<analysis>[\s\S]*?</analysis>\s*)?<summary>\s*([\s\S]*?)\s*(?:</summary>|$)"
_WRAPPED = re.compile(WRAPPED)
_ANSI = re.compile(ANSI)
_CANCELLED = re.compile(CANCELLED)
_HARNESS = tuple((kind, re.compile(pattern)) for kind, pattern in HARNESS)
_WRAPPED_ONLY = tuple((kind, re.compile(pattern)) for kind, pattern in WRAPPED_ONLY)
_SUMMARY = re.compile(SUMMARY)


def clean(text: str) -> str:
    """`text` without Claude Code's wrappers and escape sequences."""
    return _ANSI.sub("", _WRAPPED.sub("", text)).strip(" \t\r\n")


_MARKUP = re.compile(r"\*\*|__|`")


def unmarked(text: str) -> str:
    """`text` without Markdown's emphasis and code marks (the words stay)."""
    return _MARKUP.sub("", text)


def harness_kind(text: str) -> str | None:
    """What Claude Code's own message `text` is (see HARNESS); None for someone's own words."""
    cleaned = clean(text)
    if not cleaned:
        return next((kind for kind, pattern in _WRAPPED_ONLY if pattern.match(text)), "wrapped")
    return next((kind for kind, pattern in _HARNESS if pattern.match(cleaned)), None)


def is_noise(text: str) -> bool:
    """Whether `text` says nothing of anyone's own: Claude Code's (see HARNESS), or nothing once
    cleaned."""
    return harness_kind(text) is not None


def cancelled(answer: str) -> bool:
    """Whether a tool call's answer says it never ran (see CANCELLED)."""
    return _CANCELLED.search(answer[:1_000]) is not None


def summary_of(text: str) -> str | None:
    """The summary itself, if `text` is Claude Code's summary of a compacted conversation."""
    found = _SUMMARY.match(text)
    return found.group(1) if found else None
