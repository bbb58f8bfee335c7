"""Everything derived from the event log: the log itself (`event_log.py`), the tables folded from
it (`folds/`, `projector.py`, `store.py`), the vectors (`vectors.py`, `embedder.py`), and the read
side: SQL (`sql.py`) and recall (`recall/`)."""
