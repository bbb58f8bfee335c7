"""The folds: how each kind of event changes the projection tables, as set-based SQL, grouped
by family (schemas/registry.py says which family folds each kind), each family's tables beside
its folds.

Every statement reads the table `batch` (events not folded yet, each once) and changes one
table. They run in the order of FOLDS, so a batch holding a fact and its supersession folds
like two batches would. Each fold is commutative across batches: counts add up, times take
their min or max, and a row changed by an event keeps that event's id (the `*_by` columns), so
an older event that arrives late never overwrites a newer one. That makes a replay (one pass
in id order) produce the same tables as the live projector (batch after batch, in arrival order).

A fold reads the kinds of event its SQL names (or, picking its rows by `kind NOT IN (...)`, every
kind but those), and runs only on a batch holding one of them; one that names none runs on every
batch (READS, runs_on). Most batches are a prompt or a tool call: a fold costs a few
milliseconds even over nothing.

The schema version (projections/store.py) is a hash of SCHEMA and FOLDS: change either, and a
store of the old version is rebuilt from the log.
"""

import re

from projections.folds import base, costs, dynamics, episodes, facts, sessions, signals, tools
from projections.folds.base import MAPPING
from projections.folds.facts import FACTS_AS_OF, FACTS_CURRENT, current
from schemas.registry import KINDS

BY_FAMILY = {
    "sessions": sessions,
    "tools": tools,
    "facts": facts,
    "episodes": episodes,
    "signals": signals,
    "dynamics": dynamics,
    "costs": costs,
}
SCHEMA = "\n".join([base.TABLES, *(family.TABLES for family in BY_FAMILY.values())])
# the Python functions folds call, which the writer's connection is given (projections/store.py)
FUNCTIONS = tools.FUNCTIONS
FUNCTION_MODULES = tools.FUNCTION_MODULES  # whose source decides what those functions return
FOLDS: list[tuple[str, str]] = [
    *sessions.FOLDS,
    *tools.FOLDS,
    *base.FOLDS,
    *facts.FOLDS,
    *episodes.FOLDS,
    *signals.FOLDS,
    *dynamics.FOLDS,
    *costs.FOLDS,
]

_KIND_LITERAL = re.compile(r"'([a-z_]+\.[a-z_]+)'")
_EXCLUDED = re.compile(r"\bkind\s+NOT\s+IN\s*\(([^)]*)\)", re.IGNORECASE)


def _reads(sql: str) -> frozenset[str] | None:
    """The kinds a fold reads: those its SQL names, or for one picking its rows by `kind NOT IN
    (...)`, every kind but those; None (every batch) for a fold that names none."""
    if excluded := _EXCLUDED.findall(sql):
        return frozenset(KINDS) - {k for group in excluded for k in _KIND_LITERAL.findall(group)}
    named = frozenset(k for k in _KIND_LITERAL.findall(sql) if k in KINDS)
    return named or None


def runs_on(fold: str, kinds: set[str]) -> bool:
    """Whether `fold` runs on a batch of these kinds: one it reads is among them, or a kind of
    no one's (from a newer reverie) that every fold sees."""
    reads = READS[fold]
    return reads is None or not reads.isdisjoint(kinds) or not kinds <= KINDS.keys()


# each fold's kinds, by name (None: it runs on every batch)
READS: dict[str, frozenset[str] | None] = {name: _reads(sql) for name, sql in FOLDS}

# the projector's own tables, not for reading
BOOKKEEPING = frozenset({"meta", "folded", "folded_segments", "tool_requests"})
# what readers see, by the family that fills it ("base": provenance, and the projects' roots)
TABLES: dict[str, list[str]] = {
    family: [table for table in re.findall(r"CREATE TABLE (\w+)", module.TABLES) if table not in BOOKKEEPING]
    for family, module in {**BY_FAMILY, "base": base}.items()
}

__all__ = [
    "BOOKKEEPING",
    "BY_FAMILY",
    "FACTS_AS_OF",
    "FACTS_CURRENT",
    "FOLDS",
    "FUNCTIONS",
    "FUNCTION_MODULES",
    "MAPPING",
    "READS",
    "SCHEMA",
    "TABLES",
    "current",
    "runs_on",
]
