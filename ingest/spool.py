"""The spool: where a hook leaves its event when Redis cannot take it, until the stack drains it.

One file per event, named by the event id, written atomically: any number of hook processes
can spool at once without locks, a crash mid-write leaves no half event, and the names sort
in time order. Draining sends each file to the stream, then deletes it; a crash in between
sends it again later, and the dispatcher drops the repeat by event id.

Who drains: the dispatcher, for the data directory it shares with the hooks (the embedded
stack). A Redis elsewhere (a compose stack's, published on this host) has its dispatcher in a
container that never sees this host's spool: there, a hook that reached Redis while events wait
in the spool leaves a process behind to deliver them (`deliver_later`), one at a time.

Both deliver through `append_durably`, reverie's one way to append and wait until the server has
the events on disk: a spool file is deleted only then.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

from ingest.resp import Connection, RedisRefused, RedisUnavailable
from schemas.disk.files import private_directory, sync_directory, write_durably
from schemas.settings import STREAM, Settings

TYPE_CHECKING = False
if TYPE_CHECKING:  # collections.abc costs a hook a millisecond and more
    from collections.abc import Callable, Iterator, Mapping, Sequence

    Command = tuple[bytes | str, ...]

SUFFIX = ".json"
WAITAOF = ("WAITAOF", "1", "0", "1000")  # this server's append-only file, no replica, within 1 s


class NotOnDisk(RedisUnavailable):
    """The server took the events but did not write them to its append-only file in time."""


def xadd(data: bytes) -> Command:
    """The command that appends one encoded event to the stream."""
    return ("XADD", STREAM, "*", "e", data)


def append_durably(
    send: Callable[[list[Command]], Sequence[object]], batch: Sequence[bytes], refused: type[Exception]
) -> bool:
    """Append the encoded events to the stream and wait until the server's append-only file has
    them on disk; whether it has one. `send` runs commands in one round trip and gives their
    replies (ingest.resp's Connection.pipeline, or ingest.emit.pipelined for redis-py), raising
    `refused` when the server answers one with an error.

    False: a Redis without an append-only file (a shared one) refuses WAITAOF, and what it
    acknowledged is all there is. NotOnDisk if the file did not have them within 1 s: keep them
    and send them again (the dispatcher keeps one event of each id).
    """
    send([xadd(data) for data in batch])
    try:
        [synced] = send([WAITAOF])
    except refused:
        return False
    if not isinstance(synced, list) or synced[0] < 1:
        raise NotOnDisk("Redis did not write the appended events to disk within 1 s")
    return True


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


def deliver_later(settings: Settings, environ: Mapping[str, str]) -> bool:
    """If events wait in the spool, start a process, detached, that delivers them (`deliver`);
    whether one was started. For hooks whose Redis is not the embedded server, whose dispatcher
    drains the spool itself. Costs a hook a directory listing when the spool is empty."""
    if not any(spooled(spool_dir, float("inf")) for spool_dir in settings.spool_dirs):
        return False
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = f"import sys; sys.path.insert(0, {root!r}); from ingest.spool import main; main()"
    null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:
        argv = [sys.executable, "-S", "-I", "-c", code]
        os.posix_spawn(sys.executable, argv, dict(environ), file_actions=null, setsid=True)
    except OSError:  # the next hook tries again
        return False
    return True


def deliver(settings: Settings) -> int:
    """Send the spooled events to the settings' Redis, unless another process is at it; how
    many were sent. Files are deleted once Redis has them on disk (or has no append-only file)."""
    private_directory(settings.spool_dir, create=True)
    with open(os.path.join(settings.spool_dir, ".deliver.lock"), "wb") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0
        with Connection(settings.redis_url, 5, 5, own=settings.embedded) as redis:

            def send(batch: Sequence[bytes]) -> None:
                append_durably(redis.pipeline, batch, RedisRefused)

            return sum(drain(spool_dir, send) for spool_dir in settings.spool_dirs)


def main() -> None:
    """The process `deliver_later` starts."""
    os.umask(0o077)
    deliver(Settings.from_env(os.environ))
