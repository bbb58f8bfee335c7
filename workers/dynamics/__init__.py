"""The dynamics of memory: what recurs crystallizes, what is used strengthens, what is never used
fades, and a dream cycle consolidates, as RQ jobs that read a snapshot of the projections and
emit derived events (the projector folds them; a replay runs none of these again).

Each module is one concern and pure where it can be: the jobs (workers/dynamics/jobs.py) read,
call them, and emit, so that a job run twice, or on two machines at once, emits the same ids.
"""

from ingest.emit import Worker

# Bump a version when the same snapshot would yield other derived events.
SIGNALS = Worker("signals", 1)
LIFECYCLE = Worker("lifecycle", 1)
DREAM = Worker("dream", 1)
COMMUNITIES = Worker("communities", 1)
STRENGTH = Worker("strength", 1)
REFLECT = Worker("reflect", 1)

# The scheduled jobs, as `reverie think` names them (workers/dynamics/schedule.py runs them).
SCHEDULED = ("lifecycle", "dream", "communities", "decay")
