"""Claude Code's own memory, read as reverie's: the files it loads itself, cut into sections, and
the events that say what each file holds now.

The files of a project (its worktree `root`): CLAUDE.md and .claude/CLAUDE.md, CLAUDE.local.md,
.claude/rules/**/*.md; the user's (for every project): CLAUDE.md and rules/**/*.md in Claude
Code's folder (CLAUDE_CONFIG_DIR, else ~/.claude); and the project's auto memory, MEMORY.md and
its topic files, in `autoMemoryDirectory` (from the user's settings.json or the project's
.claude/settings.local.json, the latter winning: Claude Code takes it from no shared project
settings) or ~/.claude/projects/<the project's key>/memory.

A memory is a section: a heading and what follows it up to the next heading, with the headings
above it, cut at its paragraphs when longer than SECTION_LIMIT. A section is how these files
are written (MEMORY.md's index lines, a rules file's topic, CLAUDE.md's "## Testing"): it keeps
each line with what it is about, where a bullet alone ("- run it with -q") would not say what
of. Headings are read as CommonMark reads them (schemas/text/markdown.py): a `#` line inside code is
not one.

Never read: YAML front matter, and CLAUDE.md's memory section (ingest/claude_md.py `outside`),
which reverie writes itself (`reverie curate`); markers that make no single block are the
user's text, as curation leaves them. Windows line endings are read as Unix ones.

`readings` plans the events: a file whose bytes have the digest of its newest reading is
skipped; one that changed is read again, a section an event; one with nothing to import, or
gone, is one event with no text. A reading's time is the file's modification time, and always
after the reading before (a file restored to an older copy is newest all the same). Its ids
follow from the file, its digest and that time: two runs over the same files and the same
known readings plan the same events, so the dispatcher keeps one of each.

Standard library and msgspec only; a file is read whole (they are a few KB), at most FILE_LIMIT,
and only a regular file is read (a FIFO named CLAUDE.md is passed over, never waited on).
"""

import glob
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from typing import Literal

import msgspec

from ingest.claude_md import outside
from ingest.project import project_key
from schemas.disk.files import read_file
from schemas.ids import derived_event_id
from schemas.observed import ClaudeMemoryOrigin, ClaudeMemoryRead
from schemas.text.markdown import headings

SECTION_LIMIT = 2000  # characters of a memory, as `reverie remember`'s
FILE_LIMIT = 1 << 20  # bytes read of a file: memory files are a few KB

Scope = Literal["project", "global"]


class MemoryFile(msgspec.Struct, frozen=True):
    """A file Claude Code loads as memory, whether it is there or not."""

    path: str
    origin: ClaudeMemoryOrigin
    scope: Scope = "project"


class Section(msgspec.Struct, frozen=True):
    heading: str  # the headings it is under, " > " between them
    text: str


class Known(msgspec.Struct, frozen=True):
    """A file's newest reading, as the projections hold it: its digest ("" gone) and time."""

    digest: str
    ts_ms: int
    origin: ClaudeMemoryOrigin
    scope: Scope


class Planned(msgspec.Struct, frozen=True):
    """An event to emit: a reading's section, under the id and at the time it derives."""

    event_id: str
    ts_ms: int
    payload: ClaudeMemoryRead


class Place(msgspec.Struct, frozen=True):
    """A project and the root of one of its worktrees, on this disk."""

    project: str
    root: str


def claude_dir(home: str, environ: Mapping[str, str]) -> str:
    """Claude Code's folder: CLAUDE_CONFIG_DIR, else ~/.claude."""
    return environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")


def memory_files(
    place: Place, home: str, environ: Mapping[str, str]
) -> tuple[list[MemoryFile], set[str], set[str]]:
    """The files Claude Code loads as `place`'s memory that are there, the folders they were
    looked for in, and those looked in at any depth (a file once read there and gone since is
    gone)."""
    user = claude_dir(home, environ)
    auto = auto_memory_dir(place, home, environ)
    named = [
        MemoryFile(os.path.join(place.root, "CLAUDE.md"), "project"),
        MemoryFile(os.path.join(place.root, ".claude", "CLAUDE.md"), "project"),
        MemoryFile(os.path.join(place.root, "CLAUDE.local.md"), "local"),
        MemoryFile(os.path.join(user, "CLAUDE.md"), "user", "global"),
    ]
    found = [f for f in named if os.path.isfile(f.path)]
    found += _markdown(os.path.join(place.root, ".claude", "rules"), "rules", "project", recursive=True)
    found += _markdown(os.path.join(user, "rules"), "user-rules", "global", recursive=True)
    found += _markdown(auto, "auto-memory", "project", recursive=False)
    rules = {os.path.join(place.root, ".claude", "rules"), os.path.join(user, "rules")}
    return found, {os.path.dirname(f.path) for f in named} | {auto}, rules


def _markdown(folder: str, origin: ClaudeMemoryOrigin, scope: Scope, recursive: bool) -> list[MemoryFile]:
    pattern = os.path.join(glob.escape(folder), *(["**"] if recursive else []), "*.md")
    found = sorted(glob.glob(pattern, recursive=recursive))
    return [MemoryFile(p, origin, scope) for p in found if os.path.isfile(p)]


def auto_memory_dir(place: Place, home: str, environ: Mapping[str, str]) -> str:
    """Where Claude Code keeps `place`'s auto memory: `autoMemoryDirectory` as the project's
    local settings or the user's say, else its folder under projects/, keyed by the repository's
    main worktree (the project, when it is a path) or else the worktree's root."""
    user = claude_dir(home, environ)
    for settings, base in (
        (os.path.join(place.root, ".claude", "settings.local.json"), place.root),
        (os.path.join(user, "settings.json"), home),
    ):
        if chosen := _setting(settings, "autoMemoryDirectory"):
            if chosen == "~" or chosen.startswith(("~/", "~\\")):
                chosen = home + chosen[1:]
            return os.path.normpath(os.path.join(base, chosen))
    keys = [project_key(p) for p in (place.project, place.root) if os.path.isabs(p)]
    folders = [os.path.join(user, "projects", key, "memory") for key in dict.fromkeys(keys)]
    return next((f for f in folders if os.path.isdir(f)), folders[0] if folders else "")


def _setting(path: str, name: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(FILE_LIMIT))
    except (OSError, ValueError):
        return None
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def sections(text: str) -> list[Section]:
    """The sections of a Markdown file's text (see the module's docstring)."""
    found: list[Section] = []
    headings: list[tuple[int, str]] = []
    body: list[str] = []

    def close() -> None:
        found.extend(_cut(" > ".join(h for _, h in headings), "\n".join(body).strip("\n")))
        body.clear()

    for line, heading in _lines(text):
        if heading is None:
            body.append(line)
            continue
        close()
        level, title = heading
        headings[:] = [h for h in headings if h[0] < level] + [(level, title)]
    close()
    return found


def _lines(text: str) -> Iterator[tuple[str, tuple[int, str] | None]]:
    """Each line to read, with its heading (level, title) if it is one, as CommonMark reads
    them (a `#` line in code is text, a setext heading's underline is its heading's): front
    matter and the block reverie writes left out."""
    lines = outside(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[0].strip() == "---" and "---" in (rest := [line.strip() for line in lines[1:]]):
        lines = lines[rest.index("---") + 2 :]
    found = headings("\n".join(lines))
    within = -1  # the last line of the heading being read
    for n, line in enumerate(lines):
        if (heading := found.get(n)) is not None:
            within = heading.last
            yield line, (heading.level, heading.title)
        elif n > within:
            yield line, None


def _cut(heading: str, body: str) -> list[Section]:
    """A section, or its parts of at most SECTION_LIMIT characters, cut between paragraphs
    where it can, else between lines, else anywhere. None for an empty one."""
    if not body.strip():
        return []
    parts: list[str] = []
    for piece in _pieces(body):
        if parts and len(parts[-1]) + 2 + len(piece) <= SECTION_LIMIT:
            parts[-1] += "\n\n" + piece
        else:
            parts.append(piece)
    return [Section(heading, part) for part in parts]


def _pieces(body: str) -> Iterator[str]:
    for paragraph in re.split(r"\n[ \t]*\n", body):
        if not (paragraph := paragraph.strip("\n")).strip():
            continue
        if len(paragraph) <= SECTION_LIMIT:
            yield paragraph
            continue
        for line in paragraph.split("\n"):
            for start in range(0, len(line) or 1, SECTION_LIMIT):
                yield line[start : start + SECTION_LIMIT]


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def readings(
    place: Place, known: Mapping[str, Known], home: str, environ: Mapping[str, str]
) -> list[Planned]:
    """The events that bring what reverie knows of `place`'s memory files (`known`: each file's
    newest reading, by path) up to what they hold now (see the module's docstring)."""
    files, folders, trees = memory_files(place, home, environ)
    planned: list[Planned] = []
    for file in files:
        try:
            data, stamp = read_file(file.path, FILE_LIMIT)
        except OSError:  # gone, unreadable, or no regular file (a FIFO): read next time, if ever
            continue
        modified = stamp.st_mtime_ns // 1_000_000
        said = digest(data)
        before = known.get(file.path)
        if before is not None and before.digest == said:
            continue
        at = max(modified, before.ts_ms + 1) if before else modified
        found = sections(data.decode("utf-8", errors="replace"))
        planned += _planned(place, file, said, at, found)
    here = {f.path for f in files}
    for path, before in sorted(known.items()):
        looked = os.path.dirname(path) in folders or any(path.startswith(t + os.sep) for t in trees)
        if before.digest and path not in here and looked:
            gone = MemoryFile(path, before.origin, before.scope)
            planned += _planned(place, gone, "", before.ts_ms + 1, [])
    return planned


def _planned(place: Place, file: MemoryFile, said: str, at: int, found: list[Section]) -> list[Planned]:
    """A reading's events: a section each, or one with no text when it has none."""
    holder = "" if file.scope == "global" else place.project  # a user's file: one reading for all
    shown = found or [Section("", "")]
    return [
        Planned(
            derived_event_id(at, "claude-memory", holder, file.path, said or "gone", str(i)),
            at,
            ClaudeMemoryRead(
                path=file.path,
                origin=file.origin,
                digest=said,
                heading=section.heading,
                text=section.text,
                scope=file.scope,
            ),
        )
        for i, section in enumerate(shown)
    ]
