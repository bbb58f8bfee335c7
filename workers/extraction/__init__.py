"""Extraction: what a session teaches, distilled from its events into entities, facts and
episodes, appended as derived events (the projector folds them; a replay never extracts again).

It runs as RQ jobs (workers/jobs.py), one per archived batch, on any worker that shares the
data directory. Everything it derives follows from the events it read, so a job run twice, or
on two machines at once, emits the same events, which the dispatcher keeps once.
"""

from ingest.emit import Worker

# Bump the version when the same events would yield other derived events.
EXTRACTOR = Worker("extract", 2)
