"""Reciprocal Rank Fusion, recall's other way to fuse its components (the default sums z-scores,
recall/baseline.py): each component's values become 1 / (k + rank), rank from 1, k = 60, and a
memory's fused score is their weighted sum."""

from collections.abc import Hashable, Mapping
from typing import TypeVar

K = 60
Item = TypeVar("Item", bound=Hashable)


def reciprocal_ranks(scores: Mapping[Item, float], k: int = K) -> dict[Item, float]:
    """1 / (k + rank) of each item, ranked by its score, the highest first; equal scores share
    the better rank (a whole session's turns share its score)."""
    ranks: dict[float, int] = {}
    for rank, score in enumerate(sorted(scores.values(), reverse=True), start=1):
        ranks.setdefault(score, rank)
    return {item: 1.0 / (k + ranks[score]) for item, score in scores.items()}
