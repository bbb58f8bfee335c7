"""How strongly a memory comes to mind, beside how well it matches.

- ACT-R base-level activation: B = ln(sum over past uses of t^-d), d = 0.5, t in seconds since
  each use (its creation counts as one). Corrections and failures weigh 1.5 (emotional weight).
- Spreading activation from the entities in context, with the fan effect: each context entity
  gives W/n (n entities in context) times S - ln(fan) (never below 0), fan being how many
  memories it is in.
- Hebbian association: entities recalled together grow a weight w (w' = w + 0.1 (1 - w), the
  view `associations`); a memory about entities associated with those in context gets W/n
  times S times their weights.
- FSRS retrievability: R = (1 + 0.9 t/S)^-0.5, t days since the last use, S the stability in
  days: a day at first, S (1 + 0.1 (1 - R)) after a recall that helped, 0.8 S after one that did
  not (workers/dynamics/decay.py judges them).
- Recency: exp(-days/90). Confidence: as recorded (1 for what is observed).
"""

import math
from collections.abc import Sequence

DECAY = 0.5
EMOTIONAL_WEIGHT = 1.5
MAX_ASSOCIATIVE_STRENGTH = 2.0  # ACT-R's S
RECENCY_DAYS = 90.0
DAY_S = 86_400.0
INITIAL_STABILITY_DAYS = 1.0


def base_level(ages_s: Sequence[float], emotional: bool = False, decay: float = DECAY) -> float:
    """ACT-R base-level activation of a memory used `ages_s` seconds ago (one age per use)."""
    total = sum(max(age, 1.0) ** -decay for age in ages_s)
    if total == 0:
        return -math.inf
    return math.log(total * (EMOTIONAL_WEIGHT if emotional else 1.0))


def spreading(
    fans: Sequence[int], context_entities: int, strength: float = MAX_ASSOCIATIVE_STRENGTH
) -> float:
    """Activation spread to a memory by the context entities it shares (their fans given)."""
    if not context_entities:
        return 0.0
    weight = 1.0 / context_entities
    return sum(weight * max(strength - math.log(max(fan, 1)), 0.0) for fan in fans)


def associative(weights: float, context_entities: int, strength: float = MAX_ASSOCIATIVE_STRENGTH) -> float:
    """Activation spread along Hebbian associations: `weights`, summed over the pairs of one of
    the memory's entities and one in context."""
    return strength * weights / context_entities if context_entities else 0.0


def stability_days(ages_s: Sequence[float], failed_s: Sequence[float] = ()) -> float:
    """FSRS stability after the uses `ages_s` seconds ago: a day at the first, then each recall
    moves it by `stability_after`, as a failure if its age is among `failed_s`."""
    failed = {round(age, 3) for age in failed_s}
    stability = INITIAL_STABILITY_DAYS
    last = None
    for age in sorted(ages_s, reverse=True):  # oldest use first
        if last is not None:
            recalled = retrievability((last - age) / DAY_S, stability)
            stability = stability_after(stability, recalled, round(age, 3) not in failed)
        last = age
    return stability


def stability_after(stability: float, retrievability: float, success: bool) -> float:
    """FSRS: a recall that helped strengthens more the more it was forgotten, S (1 + 0.1 (1 - R));
    one that did not (contradicted, or never used) weakens it, 0.8 S."""
    return stability * (1.0 + 0.1 * (1.0 - retrievability)) if success else 0.8 * stability


def retrievability(days_since_use: float, stability: float) -> float:
    """FSRS: the probability of recalling after `days_since_use`, at `stability` days."""
    return float((1.0 + 0.9 * max(days_since_use, 0.0) / stability) ** -0.5)


def recency(days_old: float) -> float:
    return math.exp(-max(days_old, 0.0) / RECENCY_DAYS)


def logistic(x: float) -> float:
    """Activation (a log-odds) as a 0..1 strength."""
    if x == -math.inf:
        return 0.0
    return float(1.0 / (1.0 + math.exp(-x)))
