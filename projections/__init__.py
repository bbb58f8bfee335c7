"""Everything derived from the event log: the log itself, the tables and vectors folded from it,
and the read side (SQL now; recall in a later issue)."""
