"""The spool: where a hook leaves its event when Redis cannot take it, until the stack drains it.

One file per event, named by the event id, written atomically: any number of hook processes
can spool at once without locks, a crash mid-write leaves no half event, and the names sort
in time order. Draining sends each file to the stream, then deletes it; a crash in between
sends it again later, and the dispatcher drops the repeat by event id.
"""

import os
import time
from collections.abc import Callable, Iterator

from schemas.files import private_directory, sync_directory, write_durably
from schemas.settings import Settings

SUFFIX = ".json"


def spool_event(settings: Settings, event_id: str, data: bytes) -> str:
    """Keep the event in the spool; if the data directory's disk cannot take it, in the
    runtime directory's (settings.spool_dirs); the dispatcher drains both."""
    try:
        return write_durably(settings.spool_dir, event_id + SUFFIX, data)
    except OSError:
        fallback = settings.spool_dirs[1]
        private_directory(os.path.dirname(fallback), create=True)
        return write_durably(fallback, event_id + SUFFIX, data)


def spooled(spool_dir: str, abandoned_after_s: float = 60.0) -> list[str]:
    """Paths of the spooled events, oldest first.

    With them, the temp files of hooks that died before renaming theirs, once they are older
    than `abandoned_after_s`: such a file may hold a whole event (or half of one, which the
    dispatcher turns into a dead letter), and nothing else would ever deliver it.
    """
    try:
        names = os.listdir(spool_dir)
    except FileNotFoundError:
        return []
    old = time.time() - abandoned_after_s
    found = []
    for name in names:
        path = os.path.join(spool_dir, name)
        if not name.startswith(".") and name.endswith(SUFFIX):
            found.append((name, path))
        elif name.startswith(".") and name.endswith(".tmp") and _mtime(path) < old:
            found.append((name[1:], path))
    return [path for _, path in sorted(found)]


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except FileNotFoundError:  # renamed meanwhile: it will be listed next time
        return float("inf")


def _chunks(paths: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(paths), size):
        yield paths[start : start + size]


def drain(spool_dir: str, send: Callable[[list[bytes]], None], batch: int = 500) -> int:
    """Send every spooled event (in batches, oldest first) and delete what was sent."""
    paths = spooled(spool_dir)
    for chunk in _chunks(paths, batch):
        payloads = []
        for path in chunk:
            with open(path, "rb") as f:
                payloads.append(f.read())
        send(payloads)
        for path in chunk:
            os.unlink(path)
        sync_directory(spool_dir)
    return len(paths)
