"""Reciprocal Rank Fusion: ranked lists from several retrievers (and queries) made into one.

score(d) = sum over lists of weight / (k + rank of d in that list), rank from 1; k = 60.
"""

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = 60
Item = TypeVar("Item", bound=Hashable)


def fuse(rankings: Sequence[tuple[Sequence[Item], float]], k: int = K) -> dict[Item, float]:
    """RRF scores of every item in the (ranking, weight) pairs, best first."""
    scores: dict[Item, float] = {}
    for ranking, weight in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return dict(sorted(scores.items(), key=lambda pair: -pair[1]))
