"""`reverie curate`: CLAUDE.md's memory section and seed 004's three files, from what reverie
trusts (projections/curation.py), written where Claude Code loads them.

Only the block between the markers of the project's CLAUDE.md is written (ingest/claude_md.py):
every byte outside stays as it was, a file with no block gets one at its end, a file whose
markers make no single block is left alone with an error. `.claude/memory/facts.md`,
`preferences.md` and `episodes.md` hold the same parts, for reading and diffing in git. Every
file is checked before the first is written (reverie/project_files.py: inside the project, a
regular file, writable, bounded), and what the user writes meanwhile is kept. A file already as
it would be written is not touched; `--dry-run` shows the changes as diffs and writes nothing.
`--review` asks the user, one by one, about the memories that wait for their yes (what the agent
remembered on its own, what an import brought, what prompts stated...), records each answer
(`memory.approved`), then writes. Reads the projections' newest snapshot: the stack need not
run.
"""

import difflib
import os
from collections.abc import Callable

import msgspec

from ingest.claude_md import MemoryBlockError, splice
from projections.curation import OFFERED, Section, Waiting, files, render, section
from reverie.folded import holds_event
from reverie.project_files import Refused, read_text, replacing, rewrite, target, write_all
from schemas.settings import Settings
from schemas.text.markdown import LONGEST

MEMORY_DIR = os.path.join(".claude", "memory")


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
    `dry_run`, print what would change). Every file is checked and read before any is written:
    MemoryBlockError when CLAUDE.md's markers make no single block; Refused (an OSError) for a
    file that leads out of the project, is no regular file, is read-only or too large;
    UnicodeDecodeError when a file is not UTF-8; NoSnapshot before the projector's first
    snapshot. Nothing is written when any of these is raised."""
    part = section_of(settings, project)
    block = render(part)
    makers: dict[str, Callable[[str], str]] = {
        os.path.join(root, "CLAUDE.md"): lambda text: splice(text, block)
    }
    for name, text in files(part).items():
        makers[os.path.join(root, MEMORY_DIR, name)] = replacing(text)
    targets = {path: target(path, root) for path in makers}
    before = {path: read_text(found) for path, found in targets.items()}
    wanted = {path: makers[path](text) for path, text in before.items()}
    changed = [path for path, text in wanted.items() if before[path] != text]
    for path in changed:
        if dry_run:
            if show:
                _show_diff(path, before[path], wanted[path])
        elif not rewrite(targets[path], makers[path]):
            changed.remove(path)
    unchanged = [path for path in wanted if path not in changed]
    return Written(part, len(block.splitlines()), changed, unchanged)


def export_markdown(settings: Settings, project: str, directory: str) -> list[str]:
    """`project`'s memory section as seed 004's three files in `directory`; the paths written.
    NoSnapshot before the projector's first snapshot; Refused for a file that is no regular file
    of `directory` (each is checked before the first is written)."""
    texts = {
        os.path.join(directory, name): text for name, text in files(section_of(settings, project)).items()
    }
    write_all(texts, directory)
    return list(texts)


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


def _show_diff(path: str, before: str, after: str) -> None:
    from reverie.console import out

    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), path, path + " (curated)"
    )
    out.print("".join(diff), end="", highlight=False, markup=False)


def curate_command(
    project_value: str | None, dry_run: bool, review: bool = False, ask: Callable[[str], str] = input
) -> int:
    """`reverie curate`."""
    from projections.sql import NoSnapshot
    from reverie.console import fail
    from reverie.recalling import place_named
    from reverie.remembering import current_place

    project, root = place_named(project_value) if project_value else current_place()
    if root is None:
        return fail(
            f"--project {project_value}: no such folder; give the project's folder, where CLAUDE.md is"
        )
    settings = Settings.from_env()
    try:
        if review and not dry_run:
            _review(settings, project, ask)
        done = curate(settings, project, root, dry_run, show=True)
    except NoSnapshot:
        return fail(
            "nothing to curate yet: memory has no snapshot (start the stack with `reverie up --detach`)"
        )
    except MemoryBlockError as e:
        return fail(f"{os.path.join(root, 'CLAUDE.md')}: {e}")
    except UnicodeDecodeError as e:
        return fail(f"a file reverie would write is not UTF-8, so it is left alone: {e}")
    except Refused as e:
        return fail(f"nothing written: {e}")
    except OSError as e:
        return fail(f"cannot write the memory section: {e}")
    _said(done, project, dry_run, review)
    return 0


def _said(done: Written, project: str, dry_run: bool, review: bool) -> None:
    from reverie.console import err

    part = done.section
    what = (
        f"{len(part.facts)} facts, {len(part.preferences)} preferences, {len(part.episodes)} episodes "
        f"({done.lines} lines)"
    )
    if part.facts_left_out:
        what += f"; {part.facts_left_out} more facts had no room"
    if part.unwritable:
        what += f"; {part.unwritable} longer than one line of {LONGEST} characters once written, left out"
    verb = "would change" if dry_run else "wrote"
    for path in done.changed:
        err.print(f"{verb} {path}", highlight=False, markup=False)
    if not done.changed:
        err.print("nothing to change: the memory section is up to date", highlight=False, markup=False)
    err.print(f"memory section of {project}: {what}", highlight=False, markup=False)
    if part.waiting and not review:
        err.print(
            f"{len(part.waiting)} memories wait for your yes before they enter it (what the agent remembered "
            "on its own, what an import brought, what prompts stated): `reverie curate --review` asks you "
            "about each, as the dashboard's Learned page does",
            highlight=False,
            markup=False,
        )
    for offer in part.offered:
        err.print(
            f"offered: {offer.statement} (reverie's observation, confidence {offer.confidence:.2f} "
            f"> {OFFERED}; promote {offer.observation_id} on the dashboard's Learned page to write it here)",
            highlight=False,
            markup=False,
        )


def _review(settings: Settings, project: str, ask: Callable[[str], str]) -> None:
    """Ask about each memory that waits for the user's yes; record each answer given."""
    from reverie.console import err

    waiting = section_of(settings, project).waiting
    if not waiting:
        err.print("no memory waits for your yes", highlight=False, markup=False)
        return
    err.print(
        f"{len(waiting)} memories wait for your yes before CLAUDE.md's memory section (y: write it there, "
        "n: never, Enter: not now, q: stop)",
        highlight=False,
        markup=False,
    )
    last = None
    for each in waiting:
        err.print(
            f"\n{each.part}: {each.text}\n  ({each.came_from}; {each.memory_id})",
            highlight=False,
            markup=False,
        )
        try:
            answer = ask("write it into CLAUDE.md? [y/n/Enter/q] ").strip().lower()
        except EOFError:
            break
        if answer.startswith("q"):
            break
        if answer[:1] in ("y", "n"):
            last = _answer(settings, each, answer.startswith("y"))
    if last is not None and not holds_event(settings, last, timeout=15):
        err.print(
            "your answers are recorded but not in memory yet (is the stack running?): "
            "`reverie curate` once it runs writes them",
            highlight=False,
            markup=False,
        )


def _answer(settings: Settings, waiting: Waiting, yes: bool) -> str:
    """Record the user's yes or no about a waiting memory; the event's id."""
    from reverie.remembering import approve
    from schemas.kinds import SOURCE_CLI

    return approve(settings, waiting.memory_id, yes, source=SOURCE_CLI).event_id
