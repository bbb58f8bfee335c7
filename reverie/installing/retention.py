"""How long Claude Code keeps its transcripts, how much history it still holds, and raising how
long (with the user's consent) so that the history `reverie import` reads is not deleted first.

Claude Code deletes the transcripts under ~/.claude/projects that are older than
`cleanupPeriodDays` days (default 30, at least 1), each time it starts, without a word. Its
settings docs name the files that set the key, the first here winning: the managed settings an
organization deploys (nothing overrides them), a project's .claude/settings.local.json (for the
sessions started there), the user's ~/.claude/settings.json; a project's shared
.claude/settings.json may not set it (a repository must not wipe a collaborator's history).

Install raises it in the user's file alone, through the installer's plan and transaction (so
the file is backed up and uninstall puts it back), and never lowers it: a value at least as
large is left alone, and so is one that is not a whole number of days above 0 (0 once meant
"keep nothing": a choice, not an oversight). Reading is cheap: a walk over the transcripts'
folder, one stat a file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from reverie.installing.transaction import Kept, read

KEY = "cleanupPeriodDays"
DEFAULT_DAYS = 30
ASKED_DAYS = 3650  # what install offers on a terminal: ten years, as good as "keep them"
MANAGED = (  # the managed settings files, by platform
    "/etc/claude-code/managed-settings.json",
    "/Library/Application Support/ClaudeCode/managed-settings.json",
)
_DAY_S = 86_400


class Held(msgspec.Struct, frozen=True):
    """The transcripts Claude Code still holds: how many, their bytes, and the oldest's age."""

    transcripts: int
    size: int
    oldest_days: float | None  # None: there are none


class Period(msgspec.Struct, frozen=True):
    """How many days Claude Code keeps transcripts, and the file that says so (None: its default)."""

    days: int
    set_in: str | None = None
    managed: bool = False  # set by managed settings: no file of the user's can change it


def transcripts(count: int) -> str:
    """ "1 transcript", "2 transcripts"."""
    return f"{count} transcript" + ("" if count == 1 else "s")


def transcripts_folder(home: str) -> str:
    return os.path.join(home, ".claude", "projects")


def held(home: str, now: float | None = None) -> Held:
    """The transcripts (*.jsonl, subagents' included) under ~/.claude/projects."""
    count = size = 0
    oldest: float | None = None
    for folder, _, files in os.walk(transcripts_folder(home)):
        for name in files:
            if not name.endswith(".jsonl"):
                continue
            try:
                found = os.stat(os.path.join(folder, name))
            except FileNotFoundError:  # deleted meanwhile (by Claude Code's own cleanup)
                continue
            count, size = count + 1, size + found.st_size
            oldest = found.st_mtime if oldest is None else min(oldest, found.st_mtime)
    age = None if oldest is None else max(0.0, ((now or time.time()) - oldest) / _DAY_S)
    return Held(count, size, age)


def days_set(settings: dict[str, Any]) -> int | None:
    """The period `settings` set, if it sets a whole number of days above 0."""
    value = settings.get(KEY)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def period(files: Sequence[str], managed: Sequence[str] = MANAGED) -> Period:
    """The period in force: the first of the managed `managed` and the user's `files` (a
    project's local settings, then the user's: the module's docstring) that sets one."""
    for path in (*managed, *files):
        try:
            found = json.loads(read(path) or b"{}")
        except (ValueError, OSError):  # unreadable: Claude Code passes it over too
            continue
        days = days_set(found) if isinstance(found, dict) else None
        if days is not None:
            return Period(days, path, managed=path in managed)
    return Period(DEFAULT_DAYS)


def raised(settings: dict[str, Any], days: int) -> Kept | None:
    """What raising the period to `days` in `settings` changes (None: nothing, the value there
    is as large, or is not a whole number of days above 0)."""
    if KEY in settings and days_set(settings) is None:
        return None
    before = days_set(settings)
    return Kept(before, days) if before is None or before < days else None


def with_retention(settings: dict[str, Any], days: int) -> dict[str, Any]:
    """`settings` keeping transcripts `days` days, unless they keep them as long already."""
    return {**settings, KEY: days} if raised(settings, days) is not None else settings


def without_retention(settings: dict[str, Any], kept: Kept | None) -> dict[str, Any]:
    """`settings` with the period install set put back as it was; a value the user set since
    is theirs, and stays."""
    if kept is None or settings.get(KEY) != kept.set:
        return settings
    if kept.before is None:
        return {name: value for name, value in settings.items() if name != KEY}
    return {**settings, KEY: kept.before}


def changed_since(path: str, settings: dict[str, Any], kept: Kept) -> str | None:
    """What to say when the user changed the period install set in `path` (now `settings`)
    since: uninstall leaves their value."""
    value = settings.get(KEY)
    if value == kept.set:
        return None
    return (
        f"{KEY} in {path} is {'unset' if value is None else value} now, not the {kept.set} install "
        f"set: left as you set it (before install: {'unset' if kept.before is None else kept.before})"
    )


def told(found: Held, current: Period, home: str) -> str:
    """How much history Claude Code holds, and how long it keeps it."""
    where = "its default" if current.set_in is None else f"set in {current.set_in}"
    keeps = f"it deletes those older than {current.days} days at each start ({KEY}, {where})"
    if found.oldest_days is None:
        return f"Claude Code holds no transcripts in {transcripts_folder(home)} yet; {keeps}."
    return (
        f"Claude Code holds {transcripts(found.transcripts)} ({found.size / 2**20:,.1f} MB) in "
        f"{transcripts_folder(home)}, the oldest {found.oldest_days:,.0f} days old; {keeps}."
    )
