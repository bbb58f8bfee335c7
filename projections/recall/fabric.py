"""Memory Fabric's options for recall's results.

- Dedup: two results whose words overlap by a Jaccard index above 0.85 say the same thing;
  the better one stays, marked cross-validated (two memories, found apart, agree).
- Weighting: 0.3 recency + 0.5 relevance + 0.2 authority (the memory's confidence), in place of
  recall's multiplicative cognitive weighting.
"""

from collections.abc import Callable, Sequence
from typing import TypeVar

from projections.recall.words import jaccard, word_set

DUPLICATE = 0.85
RECENCY, RELEVANCE, AUTHORITY = 0.3, 0.5, 0.2
Result = TypeVar("Result")


def deduplicated(results: Sequence[Result], text: Callable[[Result], str]) -> list[tuple[Result, bool]]:
    """`results` (best first) without the ones that repeat a better one, each with whether
    another repeated it (cross-validated)."""
    kept: list[tuple[Result, frozenset[str], bool]] = []
    for result in results:
        mine = word_set(text(result))
        for i, (better, theirs, _) in enumerate(kept):
            if jaccard(mine, theirs) > DUPLICATE:
                kept[i] = (better, theirs, True)
                break
        else:
            kept.append((result, mine, False))
    return [(result, confirmed) for result, _, confirmed in kept]


def weighted(relevance: float, recency: float, confidence: float) -> float:
    return RECENCY * recency + RELEVANCE * relevance + AUTHORITY * confidence
