"""How each retriever's scores spread over all the memories in scope, so that scores of different
kinds (a cosine, a BM25 score) can be added: each becomes a z-score, how many standard
deviations above the typical memory's it is. Summing z-scores keeps what rank fusion throws
away, how far ahead the best are (on LoCoMo's development split, the same retrievers gave
R@5 58.6 fused by reciprocal rank, 67.1 by z-scores).

- The model's scores: the cosine of a prompt's vector q with a memory's x is q.x; over all the
  memories in scope its mean is q.mu and its variance q'Sq (mu and S the mean and covariance of
  their vectors). One pass over the vectors, kept, gives every prompt's exact z-scores.
- BM25's: every memory in scope has one (recall/index.py), so their mean and spread are exact.
"""

import numpy as np

from projections.recall.index import Floats, Mask, Matrix, RowIds, Scope
from projections.vectors import Vector

# The covariance is estimated on this many vectors at most: plenty for 384 dimensions, and it
# keeps a baseline of 100k memories under a second.
_SAMPLE = 8_192


class Spread:
    """The mean and covariance of a set of vectors: the spread of their cosines with any prompt."""

    def __init__(self, vectors: Matrix) -> None:
        self.mean = vectors.mean(axis=0) if len(vectors) else np.zeros(vectors.shape[1], np.float32)
        centred = vectors - self.mean
        self.covariance = centred.T @ centred / max(len(vectors), 1)

    def z(self, query: Vector, vectors: Matrix) -> Floats:
        """The z-scores of the cosines of `query` with each of `vectors`."""
        sd = max(float(query @ self.covariance @ query), 1e-12) ** 0.5
        return np.asarray((vectors @ query - query @ self.mean) / sd, dtype=np.float64)


def z_scores(scores: Floats, among: Mask, picked: RowIds) -> Floats:
    """The z-scores of the `picked` rows' `scores` against those of the rows `among` (a scope)."""
    population = scores[among]
    mean = float(population.mean()) if len(population) else 0.0
    sd = float(population.std()) if len(population) else 0.0
    return (scores[picked] - mean) / (sd or 1.0)


class Baseline:
    """The spreads of the three readings (recall/index.py) of the memories of a scope."""

    def __init__(self, scope: Scope) -> None:
        rows = np.flatnonzero(scope.mask)
        if len(rows) > _SAMPLE:
            rows = np.sort(np.random.default_rng(0).choice(rows, _SAMPLE, replace=False))
        own, with_before, around = scope.rows.readings(rows)
        self.memories = scope.count
        self.semantic = Spread(own)
        self.semantic_before = Spread(with_before)
        self.semantic_around = Spread(around)
