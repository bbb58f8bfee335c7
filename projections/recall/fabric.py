"""Memory Fabric's options for recall's results.

- Dedup: two results whose words overlap by a Jaccard index above 0.85 say the same thing;
  the better one stays, marked cross-validated (two memories, found apart, agree).
- Weighting: 0.3 recency + 0.5 relevance + 0.2 authority (the memory's confidence), in place of
  recall's multiplicative cognitive weighting.
"""

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

DUPLICATE = 0.85
RECENCY, RELEVANCE, AUTHORITY = 0.3, 0.5, 0.2
Result = TypeVar("Result")
_WORD = re.compile(r"\w+")


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def deduplicated(results: Sequence[Result], text: Callable[[Result], str]) -> list[tuple[Result, bool]]:
    """`results` (best first) without the ones that repeat a better one, each with whether
    another repeated it (cross-validated)."""
    kept: list[tuple[Result, frozenset[str], bool]] = []
    for result in results:
        mine = words(text(result))
        for i, (better, theirs, _) in enumerate(kept):
            if jaccard(mine, theirs) > DUPLICATE:
                kept[i] = (better, theirs, True)
                break
        else:
            kept.append((result, mine, False))
    return [(result, confirmed) for result, _, confirmed in kept]


def weighted(relevance: float, recency: float, confidence: float) -> float:
    return RECENCY * recency + RELEVANCE * relevance + AUTHORITY * confidence
