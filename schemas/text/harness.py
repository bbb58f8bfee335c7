"""What in a session's texts is the user's or the agent's own words, and what is Claude Code's
wrapping: ANSI escapes, `<command-name>`-style wrappers, compaction prompts, interruption
markers.

The patterns are written once, here, for Python's `re` and DuckDB's RE2 alike (no
backreferences, no look-arounds, and spaces spelled out where it matters: Python's whitespace
class is wider than RE2's): the extractor cleans with `clean`, `is_noise` and `harness_kind`,
and the projections with the same patterns in SQL (projections/folds/base.py): what Claude Code
says in the user's turn is folded apart from the user's prompts, as its own kind. Every pattern
is linear in the text (the wrappers are unwrapped by `clean` without one, see there).
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
_LEAD = r"^[ \t\r\n\f]*"  # the spaces Python's `\s` and RE2's agree on
HARNESS: tuple[tuple[str, str], ...] = (
    ("compaction_request", _LEAD + "Your task is to create a detailed summary of the conversation"),
    ("compaction_summary", _LEAD + "This session is being continued from a previous conversation"),
    ("interruption", _LEAD + r"\[Request interrupted by user"),
    ("output_pointer", _LEAD + "Read the output file to retrieve the result"),
    ("task_notification", _LEAD + "<task-notification>"),
    ("command", _LEAD + "Caveat: The messages below were generated"),
    ("skill", _LEAD + "Base directory for this skill:"),
)
# any of them, as one pattern: one pass of RE2 where trying each in turn took seven
ANY_HARNESS = "|".join(f"(?:{pattern})" for _, pattern in HARNESS)
WRAPPED_ONLY: tuple[tuple[str, str], ...] = (
    ("task_notification", _LEAD + "<task-notification>"),
    (
        "command",
        _LEAD + r"<(?:command-(?:name|message|args)|local-command-\w+|bash-(?:input|stdout|stderr))>",
    ),
)
# What a tool call that never ran answers: Claude Code cancelled it (a parallel call failed), or
# the user refused or interrupted it. Such a call is no failure of the work.
CANCELLED = (
    r"Sibling tool call errored|User rejected tool use|The user doesn't want to proceed"
    r"|\[Request interrupted by user|Interrupted by user"
)
# Claude Code's summary of a compacted conversation, as its compaction agent answers: an optional
# <analysis> of the conversation, then the <summary> itself (what memory keeps of it)
_SPACES = r"[ \t\r\n\f]*"
SUMMARY = (
    _LEAD
    + rf"(?:<analysis>[\s\S]*?</analysis>{_SPACES})?<summary>{_SPACES}([\s\S]*?){_SPACES}(?:</summary>|$)"
)
_ANSI = re.compile(ANSI)
_CANCELLED = re.compile(CANCELLED)
_HARNESS = tuple((kind, re.compile(pattern)) for kind, pattern in HARNESS)
_WRAPPED_ONLY = tuple((kind, re.compile(pattern)) for kind, pattern in WRAPPED_ONLY)
_SUMMARY = re.compile(SUMMARY)


def clean(text: str) -> str:
    """`text` without Claude Code's wrappers and escape sequences."""
    return _ANSI.sub("", _unwrapped(text)).strip(" \t\r\n")


def _unwrapped(text: str) -> str:
    """`text` without its wrappers, as `WRAPPED` removes them (the leftmost first, each to the
    first closing tag of its kind), in linear time: the pattern itself backtracks over a text of
    wrappers that never close (8,000 unclosed tags took seconds). A tag never opened again, or
    never closed after an opening, is not looked for again."""
    kept, at = [], 0
    looking = {tag: text.find(f"<{tag}>") for tag in WRAPPERS}
    looking = {tag: where for tag, where in looking.items() if where >= 0}
    while looking:
        for tag, where in list(looking.items()):  # each tag's next opening at or after `at`
            if where < at and (where := text.find(f"<{tag}>", at)) < 0:
                del looking[tag]
            else:
                looking[tag] = where
        if not looking:
            break
        tag = min(looking, key=lambda t: (looking[t], WRAPPERS.index(t)))
        start = looking[tag]
        end = text.find(f"</{tag}>", start + len(tag) + 2)
        if end < 0:  # never closed: nor will any later opening of it be
            del looking[tag]
            continue
        kept.append(text[at:start])
        at = end + len(tag) + 3
    kept.append(text[at:])
    return "".join(kept)


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
    """Whether a tool call's answer says it never ran (see CANCELLED), read as the SQL reads it:
    the start of its cleaned text."""
    return _CANCELLED.search(clean(answer)[:1_000]) is not None


def summary_of(text: str) -> str | None:
    """The summary itself, if `text` is Claude Code's summary of a compacted conversation."""
    found = _SUMMARY.match(text)
    return found.group(1) if found else None
