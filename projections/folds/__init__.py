"""The folds: how each kind of event changes the projection tables, as set-based SQL, grouped
by family (schemas/registry.py says which family folds each kind), each family's tables beside
its folds.

Every statement reads the table `batch` (events not folded yet, each once) and changes one
table. They run in the order of FOLDS, so a batch holding a fact and its supersession folds
like two batches would. Each fold is commutative across batches: counts add up, times take
their min or max, and a row changed by an event keeps that event's id (the `*_by` columns), so
an older event that arrives late never overwrites a newer one. That makes a replay (one pass
in id order) produce the same tables as the live projector (batch after batch, in arrival order).

The schema version (projections/store.py) is a hash of SCHEMA and FOLDS: change either, and a
store of the old version is rebuilt from the log.
"""

import re

from projections.folds import base, costs, dynamics, episodes, facts, sessions, signals, tools
from projections.folds.base import MAPPING
from projections.folds.facts import FACTS_AS_OF, FACTS_CURRENT, current

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
    "MAPPING",
    "SCHEMA",
    "TABLES",
    "current",
]
