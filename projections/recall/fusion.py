"""Reciprocal Rank Fusion, recall's other way to fuse its components (the default sums z-scores,
recall/baseline.py): each component's values become 1 / (k + rank), rank from 1, k = 60, and a
memory's fused score is their weighted sum."""

import numpy as np
import numpy.typing as npt

K = 60
Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


def reciprocal_ranks(scores: Floats, among: Mask | None = None, k: int = K) -> Floats:
    """1 / (k + rank) of each score, ranked among those `among` (default: all), the highest
    first; equal scores share the better rank (a whole session's turns share its score); 0
    outside `among`. One sort: O(n log n)."""
    among = np.ones(len(scores), np.bool_) if among is None else among
    descending = np.sort(-scores[among])
    ranks = np.searchsorted(descending, -scores, side="left") + 1  # 1 + how many score higher
    return np.where(among, 1.0 / (k + ranks), 0.0)
