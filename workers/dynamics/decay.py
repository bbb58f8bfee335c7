"""Whether each recall helped (daily): the outcome FSRS's stability follows.

A recalled memory was **used** when what the agent said or did later in that session (its
messages, its tools' inputs) holds enough of the memory's own words: at least a third of its
distinct words, and 2 or more (the one tokenizer, projections/recall/words.py). It **failed**
when it was recalled and never used, or when the agent contradicted it (the fact was superseded
later in that session). Each judgment is an `activation.recorded` event, cause `used` or
`failed`, at the moment of the recall, caused by the recall; scoring then grows the memory's
stability S to S (1 + 0.1 (1 - R)) after a success and cuts it to 0.8 S after a failure
(projections/recall/scoring.py).

A session's recalls are judged once the session ended or a day passed since them, and each
once: a recall already judged (its judgment folded) is skipped. Hebbian weights need no job:
the view `associations` decays a pair's weight with the days since it was last recalled
together, w (1 - rate dt).
"""

import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Literal

import duckdb

from projections.recall.words import terms
from schemas import kinds, memory
from workers.thinking.follower import Derived

Judged = Literal["used", "failed"]
JUDGE_AFTER = timedelta(days=1)
USED_SHARE = 1 / 3
USED_AT_LEAST = 2

_RECALLS = """
SELECT DISTINCT r.event_id, r.session_id, r.project, r.ts, m.memory_id, m.text, f.superseded_at IS NOT NULL
FROM (SELECT event_id, session_id, project, ts, unnest(results) AS memory_id FROM retrievals) r
JOIN memory_texts m USING (memory_id)
LEFT JOIN sessions s ON s.session_id = r.session_id
LEFT JOIN (SELECT fact_id, ts AS superseded_at FROM fact_history WHERE kind = 'fact.superseded') f
    ON f.fact_id = m.memory_id AND f.superseded_at > r.ts
    AND f.superseded_at <= coalesce(s.ended_at, r.ts + INTERVAL 1 DAY)
WHERE (s.ended_at IS NOT NULL OR r.ts < $settled)
    AND NOT EXISTS (SELECT 1 FROM provenance p
                    WHERE p.caused_by = r.event_id AND p.kind = 'activation.recorded')
ORDER BY r.event_id, m.memory_id
"""

_LATER = """
WITH recalling AS (SELECT DISTINCT session_id FROM retrievals)
SELECT session_id, ts, text FROM messages JOIN recalling USING (session_id)
UNION ALL
SELECT session_id, ts, input_summary FROM tool_uses JOIN recalling USING (session_id)
ORDER BY session_id, ts
"""


def judgments(db: duckdb.DuckDBPyConnection, now: datetime) -> Iterator[Derived]:
    """A judgment of each recalled memory not judged yet, whose session is settled at `now`."""
    later = _later_words(db)
    for event_id, session_id, project, ts, memory_id, text, contradicted in db.execute(
        _RECALLS, {"settled": now - JUDGE_AFTER}
    ).fetchall():
        said_after = set().union(*(words for at, words in later.get(session_id, []) if at > ts))
        cause: Judged = "used" if not contradicted and used(text, said_after) else "failed"
        payload = memory.ActivationRecorded(memory_id=memory_id, at=ts, cause=cause)
        yield Derived(
            kinds.ACTIVATION_RECORDED, payload, project, (event_id,), session_id, f"{memory_id}:judged"
        )


def used(text: str, said_after: set[str]) -> bool:
    """Whether enough of `text`'s own words came back in what the agent said or did."""
    own = set(terms(text))
    needed = max(USED_AT_LEAST, math.ceil(USED_SHARE * len(own)))
    return len(own & said_after) >= min(needed, len(own)) if own else False


def _later_words(db: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[datetime, frozenset[str]]]]:
    found: dict[str, list[tuple[datetime, frozenset[str]]]] = {}
    for session_id, ts, text in db.execute(_LATER).fetchall():
        found.setdefault(session_id, []).append((ts, frozenset(terms(text or ""))))
    return found
