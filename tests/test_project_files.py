"""Every file reverie writes into a project stays in the project, is bounded, and loses nothing of
the user's (reverie/project_files.py): links leading out, FIFOs, devices, read-only and huge files
are refused before anything is opened or written, through `reverie curate` as a user runs it; and
a user appending to CLAUDE.md while it is rewritten loses no line."""

import functools
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest.claude_md import END, START, splice
from reverie import project_files
from reverie.project_files import FILE_LIMIT, Refused, read_text, rewrite, target
from reverie.testing import Folding, make_event
from schemas import kinds
from schemas.disk.files import sync_directory
from schemas.ids import new_event_id
from schemas.observed import MemoryRemembered
from tests.support.processes import REVERIE


def curate(env: dict[str, str], project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*REVERIE, "curate", "--project", str(project)], env=env, capture_output=True, text=True, timeout=120
    )


def snapshot_of(project: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every path under `project` (links not followed), with its mode and what it holds or names."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(project.rglob("*")):
        info = path.lstat()
        held: bytes | str = (
            os.readlink(path)
            if path.is_symlink()
            else path.read_bytes()
            if stat.S_ISREG(info.st_mode)
            else ""
        )
        found[str(path.relative_to(project))] = (info.st_mode, held)
    return found


@pytest.fixture
def project(tmp_path: Path, folding: Folding) -> Path:
    """A project folder, and a snapshot of the test's data directory with a memory of it."""
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "README.md").write_text("# App\n")
    at = datetime.now(UTC)
    remembered = make_event(
        kinds.MEMORY_REMEMBERED, MemoryRemembered(text="We deploy on Fridays"), id=new_event_id(), ts=at,
        recorded_at=at, project=str(folder.resolve()), source=kinds.SOURCE_CLI,
    )  # fmt: skip
    folding.fold([remembered])
    return folder


def read_only(path: Path) -> None:
    path.write_text("# Mine\n")
    path.chmod(0o444)


def made_fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("arrange", "said"),
    [
        (lambda p: (p / "CLAUDE.md").symlink_to("/dev/zero"), "leads out of"),
        (lambda p: made_fifo(p / "CLAUDE.md"), "not a regular file (a FIFO)"),
        (lambda p: (p / "CLAUDE.md").mkdir(), "not a regular file (a folder)"),
        (lambda p: (p / ".claude").mkdir() or (p / ".claude" / "memory").symlink_to("/tmp"), "leads out of"),
        (
            lambda p: (p / ".claude" / "memory").mkdir(parents=True)
            or (p / ".claude" / "memory" / "facts.md").symlink_to("/dev/urandom"),
            "leads out of",
        ),
        (
            lambda p: (p / ".claude" / "memory").mkdir(parents=True)
            or made_fifo(p / ".claude" / "memory" / "episodes.md"),
            "not a regular file (a FIFO)",
        ),
        (lambda p: (p / "CLAUDE.md").write_bytes(b"x" * (FILE_LIMIT + 1)), "larger than 1024 KB"),
        (lambda p: read_only(p / "CLAUDE.md"), "read-only"),
        (lambda p: (p / "CLAUDE.md").symlink_to(p.parent / "elsewhere.md"), "leads out of"),
    ],
    ids=[
        "claude-md-to-dev-zero", "claude-md-fifo", "claude-md-folder", "memory-folder-out",
        "facts-to-urandom", "episodes-fifo", "huge", "read-only", "claude-md-to-a-sibling",
    ],
)  # fmt: skip
def test_curate_checks_every_file_first_and_writes_nothing_it_should_not(
    project: Path, env: dict[str, str], arrange: object, said: str
) -> None:
    arrange(project)  # type: ignore[operator]
    before = snapshot_of(project)
    ran = curate(env, project)
    assert ran.returncode == 1, ran.stderr
    assert said in ran.stderr and "nothing written" in ran.stderr and "Traceback" not in ran.stderr
    assert snapshot_of(project) == before  # nothing written, nothing made, modes kept
    assert not (project.parent / "elsewhere.md").exists()


def test_a_link_inside_the_project_is_written_through_and_stays_a_link(
    project: Path, env: dict[str, str]
) -> None:
    (project / "AGENTS.md").write_text("# Agents\n")
    (project / "CLAUDE.md").symlink_to("AGENTS.md")
    ran = curate(env, project)
    assert ran.returncode == 0, ran.stderr
    assert (project / "CLAUDE.md").is_symlink() and "- We deploy on Fridays\n" in (
        project / "AGENTS.md"
    ).read_text()


APPENDER = """
import sys
path, lines = sys.argv[1], int(sys.argv[2])
for n in range(lines):
    with open(path, "a") as f:
        f.write(f"user line {n}\\n")
"""


def spliced(text: str, body: str) -> str:
    return splice(text, body)


def test_a_user_appending_while_claude_md_is_rewritten_loses_no_line(tmp_path: Path) -> None:
    claude_md = tmp_path / "CLAUDE.md"
    claude_md.write_text("# Mine\n")
    found = target(str(claude_md), str(tmp_path))
    appender = subprocess.Popen([sys.executable, "-c", APPENDER, str(claude_md), "300"])
    rounds = refused = 0
    while appender.poll() is None or rounds < 5:
        rounds += 1
        try:
            rewrite(found, functools.partial(spliced, body=f"# Project Memory\n- round {rounds}\n"))
        except Refused:  # the user wrote on both sides of a replacement: the old side kept beside it
            refused += 1
    assert appender.wait(60) == 0
    text = claude_md.read_text()
    aside = "".join(p.read_text() for p in tmp_path.glob("CLAUDE.md.reverie-conflict-*"))
    assert [n for n in range(300) if f"user line {n}\n" not in text + aside] == []
    assert text.count(START) == 1 and text.count(END) == 1 and rounds >= 5
    assert refused < rounds
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def _while_replaced(
    monkeypatch: pytest.MonkeyPatch, claude_md: Path, old_side: str, new_side: str = ""
) -> None:
    """Have the user's editor, which holds the old CLAUDE.md open, write `old_side` into it (an
    append, or, ending in "!", over its text) just as reverie puts the new one in its place, and
    `new_side`, if any, append to the new one."""
    editor = open(claude_md, "r+")
    synced = sync_directory

    def saving(folder: str) -> None:
        if not editor.closed:
            editor.seek(0, 0 if old_side.endswith("!\n") else 2)
            editor.write(old_side)
            editor.close()
            if new_side:
                with open(claude_md, "a") as f:
                    f.write(new_side)
        synced(folder)

    monkeypatch.setattr(project_files, "sync_directory", saving)


def _memory(text: str) -> str:
    return splice(text, "- memory\n")


def test_bytes_appended_to_the_file_being_replaced_are_carried_into_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_md = tmp_path / "CLAUDE.md"
    claude_md.write_text("# Mine\n")
    _while_replaced(monkeypatch, claude_md, "old side\n", "new side\n")
    assert rewrite(target(str(claude_md), str(tmp_path)), _memory)
    text = claude_md.read_text()
    assert text.startswith("# Mine\n") and "- memory\n" in text
    assert text.endswith(f"{END}\nold side\nnew side\n")  # in the order they were written
    assert not list(tmp_path.glob("CLAUDE.md.reverie-conflict-*"))


def test_a_file_rewritten_while_it_was_replaced_is_kept_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_md = tmp_path / "CLAUDE.md"
    claude_md.write_text("# Mine\n")
    _while_replaced(monkeypatch, claude_md, "# Yours!\n", "new side\n")  # over its text: no append
    with pytest.raises(Refused, match="changed while reverie wrote it"):
        rewrite(target(str(claude_md), str(tmp_path)), _memory)
    [aside] = tmp_path.glob("CLAUDE.md.reverie-conflict-*")
    assert aside.read_text() == "# Yours!\n"
    assert claude_md.read_text().endswith("new side\n")  # both saves kept


def test_reading_a_project_file_is_bounded_and_never_waits(tmp_path: Path) -> None:
    fifo = made_fifo(tmp_path / "CLAUDE.md")
    with pytest.raises(Refused, match="FIFO"):
        target(str(fifo), str(tmp_path))
    assert read_text(target(str(tmp_path / "new.md"), str(tmp_path))) == ""
