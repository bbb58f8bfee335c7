"""`reverie curate`: CLAUDE.md's memory section and seed 004's three files, from what reverie
trusts (projections/curation.py), written where Claude Code loads them.

Only the block between the markers of the project's CLAUDE.md is written (ingest/claude_md.py):
every byte outside stays as it was, a file with no block gets one at its end, a file whose
markers make no single block is left alone with an error. `.claude/memory/facts.md`,
`preferences.md` and `episodes.md` hold the same parts, for reading and diffing in git. A file
already as it would be written is not touched; `--dry-run` shows the changes as diffs and writes
nothing. Reads the projections' newest snapshot: the stack need not run.
"""

import difflib
import os
import time
from pathlib import Path

import msgspec

from ingest.claude_md import MemoryBlockError, splice
from projections.curation import OFFERED, Section, files, render, section
from schemas.settings import Settings

MEMORY_DIR = os.path.join(".claude", "memory")
_NEW_FILE_MODE = 0o644  # CLAUDE.md and .claude/memory/ are the repository's, for git and the team


class Written(msgspec.Struct, frozen=True):
    """What curating did: the section, and each file changed (or that would change)."""

    section: Section
    lines: int
    changed: list[str]
    unchanged: list[str]


def section_of(settings: Settings, project: str) -> Section:
    """`project`'s memory section, as the newest snapshot holds it (NoSnapshot before the first)."""
    from projections.sql import connect

    db = connect(settings, snapshot_required=True, files=False)
    try:
        return section(db, project)
    finally:
        db.close()


def curate(settings: Settings, project: str, root: str, dry_run: bool, show: bool = False) -> Written:
    """Write `project`'s memory section into `root`'s CLAUDE.md and .claude/memory/ (or, with
    `dry_run`, print what would change). MemoryBlockError when CLAUDE.md's markers make no
    single block; UnicodeDecodeError when a file is not UTF-8 (nothing is written);
    NoSnapshot before the projector's first snapshot."""
    part = section_of(settings, project)
    block = render(part)
    claude_md = os.path.join(root, "CLAUDE.md")
    wanted = {claude_md: splice(_read(claude_md), block)}
    wanted |= {os.path.join(root, MEMORY_DIR, name): text for name, text in files(part).items()}
    changed = [path for path, text in wanted.items() if _read(path) != text]
    for path in changed:
        if dry_run and show:
            _show_diff(path, _read(path), wanted[path])
        elif not dry_run:
            write_in_project(path, wanted[path], root)
    unchanged = [path for path in wanted if path not in changed]
    return Written(part, len(block.splitlines()), changed, unchanged)


def export_markdown(settings: Settings, project: str, directory: str) -> list[str]:
    """`project`'s memory section as seed 004's three files in `directory`; the paths written.
    NoSnapshot before the projector's first snapshot."""
    written = []
    for name, text in files(section_of(settings, project)).items():
        write_in_project(path := os.path.join(directory, name), text, directory)
        written.append(path)
    return written


def export_markdown_command(project: str, directory: str) -> int:
    """`reverie export markdown`."""
    from projections.sql import NoSnapshot
    from reverie.console import err, fail

    try:
        written = export_markdown(Settings.from_env(), project, os.path.expanduser(directory))
    except NoSnapshot:
        return fail(
            "nothing to export yet: memory has no snapshot (start the stack with `reverie up --detach`)"
        )
    except OSError as e:
        return fail(f"cannot write the files: {e}")
    for path in written:
        err.print(f"wrote {path}", highlight=False, markup=False)
    return 0


def holds_event(settings: Settings, event_id: str, timeout: float) -> bool:
    """Whether the projections' snapshot holds the event `event_id` (one recorded a moment ago),
    waiting up to `timeout` seconds for the projector to fold it."""
    from projections.sql import NoSnapshot, connect

    deadline = time.monotonic() + timeout
    while True:
        try:
            db = connect(settings, snapshot_required=True, files=False)
        except NoSnapshot:
            found = None
        else:
            try:
                found = db.execute(
                    "SELECT 1 FROM projections.folded WHERE id = $id", {"id": event_id}
                ).fetchone()
            finally:
                db.close()
        if found or time.monotonic() >= deadline:
            return found is not None
        time.sleep(0.2)


def _read(path: str) -> str:
    """The file's text as stored (its line breaks kept), "" when there is none."""
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""


def write_in_project(path: str, text: str, root: str) -> None:
    """`text` into `path` at once and durably (a reader, or a crash, sees the old file or the new,
    never half), with the old file's permissions; through a symbolic link to the file it names
    (CLAUDE.md is often a link to AGENTS.md), which stays a link, as long as that file is in the
    folder `root` (a cloned repository's link to ~/.bashrc is refused: OSError)."""
    from schemas.disk.files import write_durably

    real = os.path.realpath(path)
    if os.path.commonpath([real, os.path.realpath(root)]) != os.path.realpath(root):
        raise OSError(f"{path} leads out of {root} (to {real}): left alone")
    try:
        mode = os.stat(real).st_mode & 0o7777
    except FileNotFoundError:
        mode = _NEW_FILE_MODE
    write_durably(os.path.dirname(real), os.path.basename(real), text.encode("utf-8"))
    os.chmod(real, mode)


def _show_diff(path: str, before: str, after: str) -> None:
    from reverie.console import out

    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), path, path + " (curated)"
    )
    out.print("".join(diff), end="", highlight=False, markup=False)


def curate_command(project_value: str | None, dry_run: bool) -> int:
    """`reverie curate`."""
    from projections.sql import NoSnapshot
    from reverie.console import err, fail
    from reverie.recalling import place_named
    from reverie.remembering import current_place

    project, root = place_named(project_value) if project_value else current_place()
    if root is None:
        return fail(
            f"--project {project_value}: no such folder; give the project's folder, where CLAUDE.md is"
        )
    try:
        done = curate(Settings.from_env(), project, root, dry_run, show=True)
    except NoSnapshot:
        return fail(
            "nothing to curate yet: memory has no snapshot (start the stack with `reverie up --detach`)"
        )
    except MemoryBlockError as e:
        return fail(f"{os.path.join(root, 'CLAUDE.md')}: {e}")
    except UnicodeDecodeError as e:
        return fail(f"a file reverie would write is not UTF-8, so it is left alone: {e}")
    except OSError as e:
        return fail(f"cannot write the memory section: {e}")
    part = done.section
    what = (
        f"{len(part.facts)} facts, {len(part.preferences)} preferences, {len(part.episodes)} episodes "
        f"({done.lines} lines)"
    )
    if part.facts_left_out:
        what += f"; {part.facts_left_out} more facts had no room"
    verb = "would change" if dry_run else "wrote"
    for path in done.changed:
        err.print(f"{verb} {path}", highlight=False, markup=False)
    if not done.changed:
        err.print("nothing to change: the memory section is up to date", highlight=False, markup=False)
    err.print(f"memory section of {project}: {what}", highlight=False, markup=False)
    for offer in part.offered:
        err.print(
            f"offered: {offer.statement} (reverie's observation, confidence {offer.confidence:.2f} "
            f"> {OFFERED}; promote {offer.observation_id} on the dashboard's Learned page to write it here)",
            highlight=False,
            markup=False,
        )
    return 0
