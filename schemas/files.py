"""Durable small files: written whole or not at all, and on disk before we say so.

Every room keeps the same promise (a crash at any instant loses nothing), so the primitive
lives here, beside the contracts. Standard library only: the hook uses it.
"""

import os


def write_durably(directory: str, name: str, data: bytes) -> str:
    """Write `data` to `directory/name` atomically (temp file, fsync, rename, fsync the folder)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    final = os.path.join(directory, name)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, final)
    sync_directory(directory)
    return final


def sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
