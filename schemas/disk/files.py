"""Durable small files: written whole or not at all, and on disk before we say so.

Every room keeps the same promise (a crash at any instant loses nothing), so the primitive
lives here, beside the contracts. Standard library only: the hook uses it.
"""

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO


def write_durably(directory: str, name: str, data: bytes) -> str:
    """Write `data` to `directory/name` atomically (temp file, fsync, rename, fsync the folder)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    final = os.path.join(directory, name)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            write_fully(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, final)
    except BaseException:  # a full disk: no empty or partial file stays behind
        os.unlink(temp)
        raise
    sync_directory(directory)
    return final


class NotAFile(OSError):
    """A path that names no regular file (a FIFO, a device, a folder): never read."""


def write_fully(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd` (a write may take fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def open_file(path: str) -> int:
    """`path` opened to read, without blocking; NotAFile, the descriptor closed, if it is no
    regular file (a FIFO opened without O_NONBLOCK would wait forever for a writer)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotAFile(f"{path} is not a regular file")
    return fd


def read_at_most(fd: int, limit: int) -> bytes:
    """The first `limit` bytes of the file open at `fd`, from its start, wherever `fd` stands."""
    chunks, size = [], 0
    while size < limit and (chunk := os.pread(fd, limit - size, size)):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_file(path: str, limit: int) -> tuple[bytes, os.stat_result]:
    """The first `limit` bytes of the regular file at `path`, and its stat; NotAFile for anything
    else, checked before a byte is read."""
    fd = open_file(path)
    try:
        return read_at_most(fd, limit), os.fstat(fd)
    finally:
        os.close(fd)


class NotPrivate(OSError):
    """A directory another user owns or can write: nothing of ours goes there."""


def private_directory(path: str, create: bool = False) -> str:
    """`path`, checked to be a directory of this user's that no other user can write. Given
    `create`, it is made first (0700), and if it is ours its group and others lose write access."""
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    found = os.stat(path)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
        raise NotPrivate(f"{path} is not a directory of this user's: nothing of reverie goes there")
    if found.st_mode & 0o022:
        if not create:
            raise NotPrivate(f"other users can write in {path}, which reverie keeps for itself: chmod 700 it")
        os.chmod(path, stat.S_IMODE(found.st_mode) & ~0o077)
    return path


class Busy(RuntimeError):
    """Another process holds the lock."""


def lock_directory(directory: str, busy: str) -> "TextIO":
    """Hold `directory` for this process alone (a lock on its `.lock`, released when the
    handle closes or the process dies); the handle. Raises Busy, saying `busy`, if taken."""
    import fcntl

    os.makedirs(directory, mode=0o700, exist_ok=True)
    handle = open(os.path.join(directory, ".lock"), "w")  # noqa: SIM115 (held while the caller lives)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise Busy(busy) from None
    return handle


def sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
