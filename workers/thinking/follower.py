"""What a thinking worker is: a follower of the event log (eventsourcing's leaders and followers).

A follower declares its name, the worker its derived events name (its id and version), what it
follows and one `derive` function: from a `Reading` (the events it follows, the projections'
snapshot, the embedding model, the time) to the derived events to append. It never emits, opens
nor retries anything itself: the runner (workers/thinking/runner.py) does, one way for all
(what it reads beyond the Reading, the vectors a dream clusters, it reads itself). Its
`derive` is named by its module and function (as RQ names a job), and imported only when it
runs: the command line, the scheduler and the dispatcher read the registry without loading any
model or library a follower needs.

What a follower may follow:
- `Batches`: each batch the dispatcher archives, the events of the work in it (not memory's
  own: a recall, a forgetting);
- `SessionEnds`: each session that ends, or goes idle for REVERIE_SESSION_IDLE_MINUTES without
  ending (workers/dynamics/idle.py), all its events;
- `Schedule`: a clock (RQ's cron), with no events, only the snapshot;
- `Requests`: someone asks (`reverie reflect`, the MCP tool), and waits for the answer.

A derived event's id follows from its worker (name and version), its kind, its key (or its
payload) and its causes (ingest/emit.py): a follower must derive the same events from the same
causes however the log was cut into batches, so that two runs, or two machines, agree.
"""

import importlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import msgspec

from ingest.emit import Worker

HOUR_S = 3600


class Derived(msgspec.Struct, frozen=True):
    """A derived event to emit: what, in which project and session, from which events."""

    kind: str
    payload: msgspec.Struct
    project: str
    caused_by: tuple[str, ...]
    session_id: str | None = None
    key: str | None = None  # what names it, whatever its wording (its fact or entity id)

    def placed(self) -> dict[str, Any]:
        """Where it goes and what it came from, as `Emitter.emit` and `encode` take them: the one
        mapping, so the id it is emitted under is the id `Reading.id_of` says."""
        return {
            "project": self.project,
            "session_id": self.session_id,
            "caused_by": self.caused_by,
            "key": self.key,
        }


class Batches(msgspec.Struct, frozen=True, tag="batches"):
    """Each archived batch: the events of the work in it (schemas/registry.py WORK_KINDS)."""


class SessionEnds(msgspec.Struct, frozen=True, tag="session ends"):
    """Each session that ends: every event of it, from the log."""


class Schedule(msgspec.Struct, frozen=True, tag="schedule"):
    """A clock: RQ's cron scheduler enqueues the follower at `cron` (local time)."""

    cron: str


class Requests(msgspec.Struct, frozen=True, tag="requests"):
    """Someone asks, and waits: run where asked, never queued."""


Follows = Batches | SessionEnds | Schedule | Requests

if TYPE_CHECKING:  # a Reading is made by the runner, and derives ids of Derived events
    from workers.thinking.reading import Reading

Derive = Callable[["Reading"], Iterable[Derived]]


class Follower(msgspec.Struct, frozen=True):
    """One thinking worker: see the module's docstring."""

    name: str  # as the queue, `reverie think` and `reverie status` name it
    worker: Worker  # as its derived events name it: their ids depend on it, bump its version
    # when the same causes would yield other events
    follows: Follows
    derive: str  # "package.module:function", a Derive
    about: str  # what it derives, in a line
    timeout_s: int | None = None  # RQ's default (180 s) unless given

    def deriving(self) -> Derive:
        """Its derive function, imported."""
        module, _, function = self.derive.partition(":")
        return cast("Derive", getattr(importlib.import_module(module), function))
