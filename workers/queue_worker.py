"""`reverie worker`: an RQ worker on reverie's queue that rides out Redis going away.

RQ's own loop quits when Redis is unreachable at start or is lost mid-way; the supervisor would
then restart the process after an ever longer pause (up to 30 s). This runs RQ's loop again
in process, once the server answers, until the worker is asked to stop (SIGINT or SIGTERM, which
RQ handles: a job under way finishes first).

Extraction settles facts by their embeddings' cosine: a job asks the recall service, which
holds the stack's one copy of the model (workers/thinking/reading.py), so the worker loads no
model, and neither torch nor sentence-transformers.

RQ forks its scheduler (which the retries wait on) and a work horse per job: each dies with the
worker, so a worker killed outright leaves no process behind (Linux; elsewhere they end when
they next find the worker gone).
"""

import ctypes
import os
import signal
import socket
import sys
import threading
from typing import Any

import structlog
from rq import Queue, Worker

from schemas.settings import QUEUE, Settings
from workers.redis_client import connect, is_up

log = structlog.get_logger("reverie.worker")
_PAUSE_S = 1.0  # between looks for a server that is away


class _Worker(Worker):
    """RQ's worker, which also tells `stopped` when it is asked to stop."""

    stopped: threading.Event

    def request_stop(self, signum: Any, frame: Any) -> None:
        self.stopped.set()
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]


_PR_SET_PDEATHSIG = 1


def _die_with_parents() -> None:
    """Have every child this process forks (and theirs) killed when its parent ends."""
    forking = [0]

    def before() -> None:
        forking[0] = os.getpid()

    def in_child() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != forking[0]:  # the parent ended before we asked
            os._exit(1)

    os.register_at_fork(before=before, after_in_child=in_child)


def run_worker(settings: Settings, stop: threading.Event) -> None:
    """Work on the queue until `stop` is set, starting RQ's loop again whenever it quits while
    Redis is away."""
    if sys.platform == "linux":
        _die_with_parents()
    rounds = 0
    while not stop.is_set():
        if not is_up(settings):
            log.warning("redis.unavailable", retry_in=_PAUSE_S)
            stop.wait(_PAUSE_S)
            continue
        client = connect(settings, timeout=None)  # RQ blocks on the queue for minutes
        rounds += 1
        # a worker that lost Redis may not have said it left: a new name each round
        name = f"{socket.gethostname()}.{os.getpid()}" + (f".{rounds}" if rounds > 1 else "")
        worker = _Worker([Queue(QUEUE, connection=client)], connection=client, name=name)
        worker.stopped = stop
        try:
            worker.work(logging_level="INFO", with_scheduler=True)  # RQ's retries wait on it
        except (OSError, ValueError) as e:  # lost Redis while starting or stopping
            log.warning("worker.interrupted", error=str(e))
        if not stop.is_set():
            log.warning("worker.restarting", reason="RQ's loop quit while not asked to stop")
            stop.wait(_PAUSE_S)
