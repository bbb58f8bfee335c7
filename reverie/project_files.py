"""Files reverie writes into the user's project (CLAUDE.md and its memory files, stashes, friction
reports, exported Markdown): every write stays in the project, is bounded, and loses nothing of
the user's.

- **Checked before anything is opened** (`target`): where a path leads once every link is
  followed must be inside the project (CLAUDE.md is often a link to AGENTS.md, which stays a
  link; a cloned repository's link to ~/.bashrc or /dev/zero is refused); it must be a regular
  file, or nothing yet (a FIFO, a device or a folder is refused: opening a FIFO would wait
  forever); a file the user made read-only stays as it is; one over FILE_LIMIT is not read (a
  memory file is a few KB). A command checks all its targets before it writes the first.
- **Read bounded**: opened without blocking, checked again to be a regular file, at most
  FILE_LIMIT bytes read.
- **Written whole** (`rewrite`): a temp file beside it, fsync, rename, fsync the folder, with
  the old file's permissions (0644 for a new one). A file the user changes while reverie writes
  it (an append, an editor's save) is never lost: if it changed between the read and the
  rename, it is read again and the text made again; once the new file is in place, a writer that
  opened the old one before (an `echo >>` under way) is waited for (on Linux, through /proc, 5 s
  at most), and what it appended there is carried into the new file, before what was appended
  there since; if the old file was changed otherwise, its text is kept beside it
  (`*.reverie-conflict-<time>`, never over an earlier one) and the write is refused.
"""

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from schemas.disk.files import NotAFile, open_file, read_at_most, sync_directory, write_fully

FILE_LIMIT = 1 << 20  # bytes: CLAUDE.md and its kin are a few KB
NEW_FILE_MODE = 0o644  # CLAUDE.md and .claude/ are the repository's, for git and the team
_TRIES = 3


class Refused(OSError):
    """A file of the project reverie will not read or write; the message says why."""


class Target(NamedTuple):
    """Where a write to `path` lands: `real`, inside `root`; `mode` its permissions (None: new)."""

    path: str
    real: str
    mode: int | None


def target(path: str, root: str) -> Target:
    """`path` checked for reading and writing as the module's docstring says; Refused if not."""
    real, home = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, home]) != home:
        raise Refused(f"{path} leads out of {root} (to {real}): left alone")
    try:
        found = os.stat(real)
    except FileNotFoundError:
        return Target(path, real, None)
    if not stat.S_ISREG(found.st_mode):
        raise Refused(f"{path} is not a regular file ({_kind(found.st_mode)}): left alone")
    if not found.st_mode & stat.S_IWUSR or not os.access(real, os.W_OK):
        raise Refused(f"{path} is read-only: left as it is (make it writable for reverie to write it)")
    if found.st_size > FILE_LIMIT:
        raise Refused(f"{path} is larger than {FILE_LIMIT // 1024} KB: not read, left alone")
    return Target(path, real, stat.S_IMODE(found.st_mode))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"


def read_text(found: Target) -> str:
    """The file's text as stored (its line breaks kept), "" when there is none; Refused if it is
    no longer a regular file of at most FILE_LIMIT bytes, UnicodeDecodeError if not UTF-8."""
    with _opened(found) as fd:
        return "" if fd is None else _read(fd, found.path)


@contextlib.contextmanager
def _opened(found: Target) -> Iterator[int | None]:
    try:
        fd = open_file(found.real)
    except FileNotFoundError:
        yield None
        return
    except NotAFile:
        raise Refused(f"{found.path} is not a regular file: left alone") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _read(fd: int, path: str) -> str:
    data = read_at_most(fd, FILE_LIMIT + 1)
    if len(data) > FILE_LIMIT:
        raise Refused(f"{path} is larger than {FILE_LIMIT // 1024} KB: not read, left alone")
    return data.decode("utf-8")


def _stamp(fd: int) -> tuple[int, int, int]:
    """What changes when a file's bytes do (not its ctime: replacing the file unlinks it, which
    changes that)."""
    found = os.fstat(fd)
    return found.st_ino, found.st_size, found.st_mtime_ns


def rewrite(found: Target, make: Callable[[str], str]) -> bool:
    """Write `make(the file's text)` in its place, whole, unless it is that already; whether it
    wrote. What the user writes meanwhile is kept (see the module's docstring); Refused when the
    file kept changing, or was changed on both sides of the rename other than by appending."""
    with _opened(found) as first:
        if first is None:
            return _create(found, make(""))
        fd, seen = os.dup(first), _stamp(first)
    source = _read(fd, found.path)  # the file as read
    written, late = "", ""  # what this call put in its place; what reached a file it replaced
    try:
        for _ in range(_TRIES):
            text = _merged(source, written, late)
            after = make(text)
            if after == text and not written:
                return False
            temp = _temp(found, after)
            if _stamp(fd) != seen:  # changed while it was made: read it again
                os.unlink(temp)
                source, seen = _read(fd, found.path), _stamp(fd)
                continue
            os.replace(temp, found.real)
            replaced, fd = fd, os.open(found.real, os.O_RDONLY | os.O_CLOEXEC)
            sync_directory(os.path.dirname(found.real))
            _wait_for_writers(replaced)
            changed, seen = _stamp(replaced) != seen, _stamp(fd)
            old = _read(replaced, found.path)
            os.close(replaced)
            if not changed:
                return True
            if not old.startswith(source):  # its writer did more than append: nothing to merge
                raise _Diverged(old)
            # it reached the file replaced: carried over, after what was put in its place
            late, written, source = old[len(source) :], after, _read(fd, found.path)
        raise Refused(f"{found.path} kept changing while reverie wrote it; run the command again")
    except _Diverged as diverged:
        kept = _keep_aside(found, diverged.text)
        raise Refused(
            f"{found.path} changed while reverie wrote it, on both sides: the text it had is kept in "
            f"{kept}, merge what you added there and run the command again"
        ) from None
    finally:
        os.close(fd)


class _Diverged(Exception):
    """The file was changed on both sides of its replacement, not only appended to."""

    def __init__(self, text: str) -> None:
        self.text = text


def _merged(current: str, written: str, late: str) -> str:
    """The text the file holds once what was appended to the file it replaced (`late`) is put
    back: after what this call wrote there (`written`), before what was appended since."""
    if not late:
        return current
    if not current.startswith(written):
        raise _Diverged(written + late)
    return written + late + current[len(written) :]


def _wait_for_writers(fd: int, within_s: float = 5.0) -> None:
    """Wait (at most `within_s`) until no other process holds the file of `fd` open for
    writing: a writer that opened it before it was replaced, and writes after, writes into it,
    not into the file now in its place (Linux's /proc tells; elsewhere, nothing is waited for)."""
    found = os.fstat(fd)
    deadline = time.monotonic() + within_s
    while _held_for_writing(found.st_dev, found.st_ino) and time.monotonic() < deadline:
        time.sleep(0.01)


def _held_for_writing(device: int, inode: int) -> bool:
    """Whether another process holds the file (`device`, `inode`) open for writing."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]
    except OSError:
        return False
    for pid in pids:
        try:
            numbers = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # gone, or not ours to look at
            continue
        for number in numbers:
            try:
                held = os.stat(f"/proc/{pid}/fd/{number}")
                if (held.st_dev, held.st_ino) != (device, inode):
                    continue
                with open(f"/proc/{pid}/fdinfo/{number}") as info:
                    flags = next(int(line.split()[1], 8) for line in info if line.startswith("flags:"))
            except (OSError, StopIteration, ValueError):
                continue
            if flags & (os.O_WRONLY | os.O_RDWR):
                return True
    return False


def _keep_aside(found: Target, text: str) -> str:
    """`text` in a new file beside the target, named for when (never one kept before); its path."""
    temp = _temp(found, text, suffix=".aside")
    while True:
        kept = f"{found.path}.reverie-conflict-{time.strftime('%Y%m%d-%H%M%S')}-{time.monotonic_ns()}"
        try:
            os.link(temp, kept)
        except FileExistsError:
            continue
        os.unlink(temp)
        return kept


def _create(found: Target, text: str) -> bool:
    """A new file with `text`, unless one appeared meanwhile (then it is the user's: Refused)."""
    temp = _temp(found, text)
    try:
        os.link(temp, found.real)  # fails if a file is there: nothing of the user's is replaced
    except FileExistsError:
        raise Refused(f"{found.path} appeared while reverie wrote it: run the command again") from None
    finally:
        os.unlink(temp)
    sync_directory(os.path.dirname(found.real))
    return True


def _temp(found: Target, text: str, suffix: str = ".tmp") -> str:
    """A temp file beside the target holding `text`, on disk, with the target's permissions."""
    folder = os.path.dirname(found.real)
    os.makedirs(folder, exist_ok=True)
    temp = os.path.join(folder, f".{os.path.basename(found.real)}.{os.getpid()}{suffix}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        write_fully(fd, text.encode("utf-8"))
        os.fchmod(fd, NEW_FILE_MODE if found.mode is None else found.mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(temp)
        raise
    os.close(fd)
    return temp


def replacing(text: str) -> Callable[[str], str]:
    """What makes a file `text`, whatever it held (for `rewrite`)."""
    return lambda _: text


def write_all(texts: dict[str, str], root: str) -> list[str]:
    """Each text into its path, every path checked against `root` before the first is written
    (Refused, and nothing written, if one may not be); the paths changed."""
    targets = {path: target(path, root) for path in texts}
    return [path for path, text in texts.items() if rewrite(targets[path], replacing(text))]
