"""What in a session's texts is the user's or the agent's own words, and what is Claude Code's
wrapping: ANSI escapes, `<command-name>`-style wrappers, compaction prompts, interruption
markers.

The patterns are written once, here, for Python's `re` and DuckDB's RE2 alike (no
backreferences, no look-arounds): the extractor cleans with `clean` and `is_noise`, and the
projections clean what recall ranks with the same patterns in SQL (projections/sql.py).
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
# A text that, once cleaned, is Claude Code's rather than anyone's own words: a compaction's
# instructions or its preamble, an interruption marker, a slash command's caveat.
NOISE = (
    r"^\s*(?:$|\[Request interrupted by user|Your task is to create a detailed summary of the conversation"
    r"|This session is being continued from a previous conversation|Caveat: The messages below were generated"
    r"|Base directory for this skill:)"
)
_WRAPPED = re.compile(WRAPPED)
_ANSI = re.compile(ANSI)
_NOISE = re.compile(NOISE)


def clean(text: str) -> str:
    """`text` without Claude Code's wrappers and escape sequences."""
    return _ANSI.sub("", _WRAPPED.sub("", text)).strip(" \t\r\n")


_MARKUP = re.compile(r"\*\*|__|`")


def unmarked(text: str) -> str:
    """`text` without Markdown's emphasis and code marks (the words stay)."""
    return _MARKUP.sub("", text)


def is_noise(text: str) -> bool:
    """Whether `text`, cleaned, says nothing of its own (see NOISE)."""
    return _NOISE.match(clean(text)) is not None
