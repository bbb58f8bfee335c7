"""The thinking workers, as followers of the event log: what one is (follower.py), what it reads
(reading.py), the list of them all (registry.py), the one job they all run as (runner.py) and the
clock that runs the scheduled ones (schedule.py).

The families (workers/extraction, workers/dynamics) write `derive` functions over a `Reading` and
import only the seam (follower.py, reading.py) and the shared rooms (workers/evidence, workers/llm),
never one another; the registry imports them.
"""
