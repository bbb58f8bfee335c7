"""Extraction: what a session teaches, distilled from its events into entities, facts and
episodes, appended as derived events (the projector folds them; a replay never extracts again).

It runs as two followers (workers/extraction/follow.py): one job per archived batch, one per
session that ends, on any worker that shares the data directory. Everything it derives
follows from the events it read, so a job run twice, or on two machines at once, emits the
same events, which the dispatcher keeps once.
"""
