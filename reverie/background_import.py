"""The import `reverie install claude-code` starts in the background, and how far any `reverie
import` has got: a small file in the data directory ($REVERIE_HOME/run/import.json) that each
import replaces whole as it goes, and `reverie status` reads.

The background import is `reverie import --no-wait` as a process of its own (its own session:
closing the terminal does not end it), its output in $REVERIE_HOME/run/import.log. It sends
events to the running stack, as the hooks do, and the stack archives them as it can; it needs
the stack's Redis, so install starts it only when that answers. The progress file is written at
most twice a second (and at the end): an atomic replace of a few hundred bytes.
"""

import os
import subprocess
import sys
import time

import msgspec

from schemas.disk.files import write_durably
from schemas.settings import Settings
from schemas.status import ImportProgress

PROGRESS_FILE = "import.json"
LOG_FILE = "import.log"
_EVERY_S = 0.5


def progress_path(settings: Settings) -> str:
    return os.path.join(settings.run_dir, PROGRESS_FILE)


def log_path(settings: Settings) -> str:
    return os.path.join(settings.run_dir, LOG_FILE)


class Tracker:
    """An import's progress, kept in the progress file for `reverie status`."""

    def __init__(self, settings: Settings, transcripts: int) -> None:
        self.settings = settings
        now = time.time()
        self.progress = ImportProgress(os.getpid(), now, now, transcripts)
        self.written_at = 0.0
        self._write()

    def advance(self, events: int, sent: int) -> None:
        """One more transcript read: `events` seen so far, `sent` of them new."""
        done = self.progress.done + 1
        self._update(done=done, events=events, sent=sent, force=done == self.progress.transcripts)

    def finish(self, events: int, sent: int) -> None:
        self._update(events=events, sent=sent, finished_at=time.time(), force=True)

    def _update(self, force: bool, **changed: float | int) -> None:
        self.progress = msgspec.structs.replace(self.progress, updated_at=time.time(), **changed)
        if force or time.monotonic() - self.written_at >= _EVERY_S:
            self._write()

    def _write(self) -> None:
        self.written_at = time.monotonic()
        write_durably(self.settings.run_dir, PROGRESS_FILE, msgspec.json.encode(self.progress))


def read_progress(settings: Settings) -> ImportProgress | None:
    """The last import's progress, if any import left one that reads."""
    try:
        with open(progress_path(settings), "rb") as f:
            return msgspec.json.decode(f.read(), type=ImportProgress)
    except (OSError, msgspec.ValidationError, msgspec.DecodeError):
        return None


def described(progress: ImportProgress, now: float | None = None) -> str:
    """The progress as `reverie status` shows it."""
    counted = f"{progress.done} of {progress.transcripts} transcripts, {progress.events:,} events"
    counted += f" ({progress.sent:,} new)"
    if progress.finished_at is not None:
        ago = max(0.0, (now or time.time()) - progress.finished_at)
        return f"done {_span(ago)} ago: {counted}, in {_span(progress.finished_at - progress.started_at)}"
    if _alive(progress.pid):
        return f"importing (pid {progress.pid}): {counted} so far"
    return f"stopped (pid {progress.pid} is gone) after {counted}: run `reverie import` again to finish"


def _span(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _alive(pid: int) -> bool:
    from workers.pids import ended

    try:
        return not ended(pid)
    except PermissionError:  # another user's process now: not ours
        return False


def reachable(settings: Settings) -> bool:
    """Whether the stack's Redis answers (the import needs it)."""
    import redis

    from workers.redis_client import connect

    try:
        return bool(connect(settings, timeout=2.0).ping())
    except (redis.RedisError, OSError):
        return False


def start(settings: Settings, folder: str) -> int:
    """`reverie import --no-wait FOLDER` in the background; its pid."""
    os.makedirs(settings.run_dir, mode=0o700, exist_ok=True)
    with open(log_path(settings), "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-P", "-m", "reverie", "import", "--no-wait", folder],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    return process.pid
