"""Every thinking worker, in the order the dispatcher enqueues them: the dispatcher, the
scheduler, `reverie think`, `reverie status`, the import and the askers read this list; no one
keeps another.

A new thinking worker is one module (its `derive`) and one entry here. Importing this list
imports none of them: each `derive` is imported when it runs. A worker's name and
`Worker` (name and version) is in the ids of what it derived (ingest/emit.py): bump the
version when the same causes would yield other events; never rename a Worker (its events would
be derived again, under other ids). A follower's own name is free to change.
"""

from ingest.emit import Worker
from workers.thinking.follower import HOUR_S, Batches, Follower, Requests, Schedule, SessionEnds

_EXTRACTION = "workers.extraction.follow"
_DYNAMICS = "workers.dynamics.follow"

EXTRACTOR = Worker("extract", 2)
SIGNALS = Worker("signals", 1)

FOLLOWERS: list[Follower] = [
    Follower(
        "extract",
        EXTRACTOR,
        Batches(),
        f"{_EXTRACTION}:from_batch",
        "entities, facts and decisions from the events of each batch",
    ),
    Follower(
        "episodes",
        EXTRACTOR,
        SessionEnds(),
        f"{_EXTRACTION}:from_session",
        "a session's episode, its errors and fixes, the checks it ran (and what an LLM reads in it)",
    ),
    Follower(
        "signals",
        SIGNALS,
        SessionEnds(),
        f"{_DYNAMICS}:signals",
        "a session's signals, and the preferences and recurring failures they make",
    ),
    Follower(
        "idle",
        Worker("idle", 1),
        Schedule("*/5 * * * *"),
        "workers.dynamics.idle:went_idle",
        "takes a session silent for REVERIE_SESSION_IDLE_MINUTES (30) for ended, and draws it as one",
    ),
    Follower(
        "lifecycle",
        Worker("lifecycle", 1),
        Schedule("0 */6 * * *"),
        f"{_DYNAMICS}:promotions",
        "promotes facts used in 3+ sessions to long-term memory and archives sessions idle for 30 days",
        timeout_s=HOUR_S,
    ),
    Follower(
        "catch-up",
        SIGNALS,
        Schedule("5 */6 * * *"),
        f"{_DYNAMICS}:catch_up",
        "crystallizes the preferences and recurring failures that sessions ending together missed",
        timeout_s=HOUR_S,
    ),
    Follower(
        "dream",
        Worker("dream", 1),
        Schedule("15 */6 * * *"),
        f"{_DYNAMICS}:dreams",
        "consolidates the last 7 days' episodes (a duplicate leaves recall, pointing to the fact kept)",
        timeout_s=2 * HOUR_S,
    ),
    Follower(
        "communities",
        Worker("communities", 1),
        Schedule("30 */6 * * *"),
        f"{_DYNAMICS}:graph_communities",
        "groups each project's entities by label propagation",
        timeout_s=HOUR_S,
    ),
    Follower(
        "decay",
        Worker("strength", 1),  # its events' first name: kept, so their ids stay
        Schedule("45 */6 * * *"),
        f"{_DYNAMICS}:judgments",
        "judges each recall (used or not), which FSRS stability follows: it orders memories, hides none",
        timeout_s=HOUR_S,
    ),
    Follower(
        "reflect",
        Worker("reflect", 1),
        Requests(),
        f"{_DYNAMICS}:opinion",
        "forms an opinion on a question from what memory holds on it (reverie reflect, memory_reflect)",
    ),
]


def registered() -> list[Follower]:
    return list(FOLLOWERS)


def named(name: str) -> Follower:
    for follower in FOLLOWERS:
        if follower.name == name:
            return follower
    raise LookupError(f"no thinking worker is called {name!r}: {', '.join(f.name for f in FOLLOWERS)}")


def scheduled() -> list[tuple[Follower, Schedule]]:
    """The followers of a schedule, each with it."""
    return [(f, f.follows) for f in FOLLOWERS if isinstance(f.follows, Schedule)]
