"""The dynamics of memory: what recurs crystallizes, what is used strengthens, what is never used
fades, and a dream cycle consolidates, as RQ jobs that read a snapshot of the projections and
emit derived events (the projector folds them; a replay runs none of these again).

Each module is one concern and pure where it can be; their followers (workers/dynamics/follow.py)
read a snapshot and derive, and the runner (workers/thinking/runner.py) emits, so that a job run
twice, or on two machines at once, emits the same ids.
"""
