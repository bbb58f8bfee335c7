"""What the agent did with what each recall gave it (daily): only a use strengthens a memory.

A recalled memory was **used** when what the agent said or did later in that session (its
messages, what it wrote mid-turn, its tools' inputs) holds enough of the memory's own words: at
least a third of its distinct words, and 2 or more (the one tokenizer,
projections/recall/words.py); for a passage a tool showed, the words of where it came from (the
file opened again, the command run again). It **failed** when the agent contradicted it (the
fact was superseded later in that session), and was **unused** otherwise: shown, which
strengthens and weakens nothing, so being given a memory never pushes another out. Each
judgment is an `activation.recorded` event, cause `used`, `unused` or `failed`, at the moment of
the recall, caused by the recall; a use counts in the memory's ACT-R activation, and scoring
grows its stability S to S (1 + 0.1 (1 - R)) after a use and cuts it to 0.8 S after a failure
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

Judged = Literal["used", "unused", "failed"]
JUDGE_AFTER = timedelta(days=1)
USED_SHARE = 1 / 3
USED_AT_LEAST = 2

_RECALLS = """
SELECT DISTINCT r.event_id, r.session_id, r.project, r.ts, m.memory_id,
    CASE m.kind WHEN 'passage' THEN split_part(m.text, chr(10), 1) ELSE m.text END,
    f.superseded_at IS NOT NULL
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
UNION ALL
SELECT session_id, ts, text FROM passages JOIN recalling USING (session_id) WHERE action = 'said'
ORDER BY session_id, ts
"""


def judgments(db: duckdb.DuckDBPyConnection, now: datetime) -> Iterator[Derived]:
    """A judgment of each recalled memory not judged yet, whose session is settled at `now`."""
    later = _later_words(db)
    for event_id, session_id, project, ts, memory_id, text, contradicted in db.execute(
        _RECALLS, {"settled": now - JUDGE_AFTER}
    ).fetchall():
        said_after = set().union(*(words for at, words in later.get(session_id, []) if at > ts))
        cause: Judged = "failed" if contradicted else "used" if used(text, said_after) else "unused"
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
