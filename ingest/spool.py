"""The spool: where a hook leaves its event when Redis cannot take it, until the stack drains it.

One file per event, named by the event id, written atomically: any number of hook processes
can spool at once without locks, a crash mid-write leaves no half event, and the names sort
in time order. Draining sends each file to the stream, then deletes it; a crash in between
sends it again later, and the dispatcher drops the repeat by event id.
"""

import os
from collections.abc import Callable, Iterator

from schemas.files import sync_directory, write_durably

SUFFIX = ".json"


def spool_event(spool_dir: str, event_id: str, data: bytes) -> str:
    return write_durably(spool_dir, event_id + SUFFIX, data)


def spooled(spool_dir: str) -> list[str]:
    """Paths of the spooled events, oldest first."""
    try:
        names = os.listdir(spool_dir)
    except FileNotFoundError:
        return []
    return [os.path.join(spool_dir, n) for n in sorted(names) if n.endswith(SUFFIX) and not n.startswith(".")]


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
