"""The dream cycle, after HORA's hippocampal replay: what recent episodes have in common becomes
semantic memory. What it decides, consolidation.py turns into derived events, which the
follower `dreams` (workers/dynamics/follow.py) hands the runner to emit.

- **Replay.** The episodes given (the job gives the unconsolidated ones) that ended in the
  WINDOW_DAYS (7) before `now`, and only when there are at least MIN_EPISODES (5) of them.
- **Clusters.** Two episodes are linked when they share 2 or more entities, or when
  scikit-learn's HDBSCAN puts their embeddings in one cluster (cosine, min_cluster_size 3,
  min_samples 1; its noise links nothing; not run on fewer than 3 embeddings). A cluster is a
  connected group of linked episodes, so overlapping groups of either kind merge; a lone episode
  is no cluster.
- **Reconsolidation.** A fact stated in 3 or more of a cluster's episodes (its `episode_ids`)
  gains 0.05 confidence per episode beyond 2, up to 1.0: 3 give +0.05, 4 give +0.10. As in HORA,
  an episodic fact (what happened once) never changes, and a fact that would not rise is left
  alone. A fact recurring in two clusters is reconsolidated once, by the one it recurs most in.
- **Distillation.** The hub of a cluster is the entity in most of its episodes (ties: the most
  connected, with the most distinct neighbours in the facts stated in the cluster; then the
  smallest id). Each other entity found with the hub in n >= 3 of the episodes (so only clusters
  of 3 or more distil; the most found first, ties as for the hub) gives one semantic fact, at most
  3 a cluster, with confidence min(0.9, 0.6 + 0.1 (n - 2)). Its relation and direction are those
  that the cluster's facts linking the two state in most episodes ("the user consistently uses
  react-force-graph"), else the hub `related_to` the other ("X is closely related to Y"). When
  a standing fact that is not episodic already links the two, the link is known: nothing is
  distilled, and it takes none of the 3 places.
- **Consolidation.** The clustered episodes are consolidated, each cluster into one episode;
  an episode in no cluster waits for a later cycle (HORA marks every replayed episode).

`duplicates` (light consolidation: facts said word for word again) and `skills` (skill
consolidation: similar procedures, the most successful kept) say which fact stands for which.

Pure and deterministic: the same inputs, in any order, give the same outputs (everything is
sorted by id before it is counted, clustered or chosen). Costs: linking by shared entities
counts, for each entity, the pairs of episodes it is in (quadratic in the episodes an entity is
in); HDBSCAN on cosine works on all pairs of the embedded episodes; `skills` compares every pair
of procedures.
"""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from itertools import combinations

import msgspec
import networkx as nx
import numpy as np

MIN_EPISODES = 5
WINDOW_DAYS = 7
WINDOW = timedelta(days=WINDOW_DAYS)
SHARED_ENTITIES = 2  # entities two episodes share to be linked
MIN_CLUSTER_SIZE = 3  # HDBSCAN's
PATTERN = 3  # episodes a fact, or a pair of entities, must recur in
MAX_DISTILLED = 3  # a cluster
BOOST = 0.05  # confidence per occurrence beyond 2
SAME_PROCEDURE = 0.85  # the cosine from which two procedures do the same thing


class Episode(msgspec.Struct, frozen=True):
    episode_id: str
    ended_at: datetime
    entities: tuple[str, ...]
    project: str


class Fact(msgspec.Struct, frozen=True):
    fact_id: str
    source: str
    target: str | None
    relation: str
    description: str
    confidence: float
    memory_type: str
    episode_ids: tuple[str, ...]  # the episodes (sessions) that stated it


class Entity(msgspec.Struct, frozen=True):
    entity_id: str
    name: str


class Reconsolidation(msgspec.Struct, frozen=True):
    fact_id: str
    confidence: float  # the new one
    occurrences: int  # the cluster's episodes that stated it
    cluster: tuple[str, ...]


class Distilled(msgspec.Struct, frozen=True):
    source: str
    target: str
    relation: str
    description: str
    confidence: float
    cluster: tuple[str, ...]
    evidence: tuple[str, ...]  # the facts behind it: those linking the two, stated in the cluster


class Dream(msgspec.Struct, frozen=True):
    clusters: list[tuple[str, ...]]
    reconsolidated: list[Reconsolidation]
    distilled: list[Distilled]
    consolidated: list[str]  # episode ids


class Procedure(msgspec.Struct, frozen=True):
    fact_id: str
    description: str
    successes: int
    failures: int


def dream(
    episodes: Sequence[Episode],
    facts: Sequence[Fact],
    entities: Sequence[Entity],
    embeddings: Mapping[str, np.ndarray] | None,
    now: datetime,
    known: Iterable[tuple[str, str]] = (),
) -> Dream:
    """The whole cycle over the episodes of the last WINDOW_DAYS before `now` (see the module's
    docstring): nothing when fewer than MIN_EPISODES. `known`: the pairs of entities the
    project's standing facts (not episodic) already link, wherever they were said."""
    recent = [e for e in episodes if now - WINDOW <= e.ended_at <= now]
    if len(recent) < MIN_EPISODES:
        return Dream([], [], [], [])
    found = clusters(recent, embeddings)
    by_id = {e.episode_id: e for e in sorted(recent, key=lambda e: (e.episode_id, e.entities))}
    ordered = sorted(facts, key=lambda f: f.fact_id)
    stated = _stated(ordered)
    links = _links(ordered)
    # one name an entity: the smallest, should the snapshot give two
    names = {e.entity_id: e.name for e in sorted(entities, key=lambda e: (e.entity_id, e.name), reverse=True)}
    linked = {frozenset(pair) for pair in known} | {
        pair for pair, linking in links.items() if any(f.memory_type != "episodic" for f in linking)
    }
    distilled = [
        d
        for cluster in found
        for d in _distilled(cluster, [by_id[e] for e in cluster], stated, links, linked, names)
    ]
    consolidated = sorted(e for cluster in found for e in cluster)
    return Dream(found, _reconsolidated(found, stated), distilled, consolidated)


def clusters(
    episodes: Sequence[Episode], embeddings: Mapping[str, np.ndarray] | None
) -> list[tuple[str, ...]]:
    """The clusters of `episodes` (see the module's docstring): each sorted, and sorted."""
    ids = sorted({e.episode_id for e in episodes})
    links = [*_sharing(episodes), *_by_meaning(ids, embeddings or {})]
    return [group for group in _components(ids, links) if len(group) >= 2]


def _sharing(episodes: Sequence[Episode]) -> list[tuple[str, str]]:
    """The pairs of episodes that share SHARED_ENTITIES or more entities."""
    having: dict[str, set[str]] = {}
    for episode in episodes:
        for entity in episode.entities:
            having.setdefault(entity, set()).add(episode.episode_id)
    shared = Counter(pair for ids in having.values() for pair in combinations(sorted(ids), 2))
    return sorted(pair for pair, n in shared.items() if n >= SHARED_ENTITIES)


def _by_meaning(ids: Sequence[str], embeddings: Mapping[str, np.ndarray]) -> list[tuple[str, str]]:
    """Links that chain each of HDBSCAN's clusters of the embedded episodes (noise skipped)."""
    vectors = {i: np.asarray(embeddings[i], dtype=np.float64) for i in ids if i in embeddings}
    # a zero or broken vector has no direction: it cannot be compared by cosine
    known = [i for i in ids if i in vectors and np.all(np.isfinite(vectors[i])) and np.any(vectors[i])]
    if len(known) < MIN_CLUSTER_SIZE:
        return []
    from sklearn.cluster import HDBSCAN  # here: scikit-learn takes a second to import, and the
    # processes that import this module's family (reflection's asker) mostly never cluster

    model = HDBSCAN(metric="cosine", min_cluster_size=MIN_CLUSTER_SIZE, min_samples=1, copy=False)
    labels = model.fit(np.stack([vectors[i] for i in known])).labels_
    groups: dict[int, list[str]] = {}
    for episode_id, label in zip(known, labels, strict=True):
        if label >= 0:  # -1 is noise
            groups.setdefault(int(label), []).append(episode_id)
    return [(group[0], other) for group in groups.values() for other in group[1:]]


def _components(items: Iterable[str], links: Iterable[tuple[str, str]]) -> list[tuple[str, ...]]:
    """The connected groups of `items` (singletons too), each sorted, and sorted."""
    graph = nx.Graph()
    graph.add_nodes_from(items)
    graph.add_edges_from(links)
    return sorted(tuple(sorted(group)) for group in nx.connected_components(graph))


def _stated(facts: Sequence[Fact]) -> dict[str, list[Fact]]:
    """The facts each episode stated, by fact id."""
    stated: dict[str, list[Fact]] = {}
    for fact in facts:
        for episode_id in sorted(set(fact.episode_ids)):
            stated.setdefault(episode_id, []).append(fact)
    return stated


def _links(facts: Sequence[Fact]) -> dict[frozenset[str], list[Fact]]:
    """The facts linking each pair of entities, either way, by fact id."""
    links: dict[frozenset[str], list[Fact]] = {}
    for fact in facts:
        if fact.target is not None and fact.target != fact.source:
            links.setdefault(frozenset((fact.source, fact.target)), []).append(fact)
    return links


def _said_in(cluster: Sequence[str], stated: Mapping[str, list[Fact]]) -> Counter[Fact]:
    """The facts stated in the cluster's episodes, with how many of them stated each."""
    return Counter(fact for episode_id in cluster for fact in stated.get(episode_id, ()))


def _reconsolidated(
    found: Sequence[tuple[str, ...]], stated: Mapping[str, list[Fact]]
) -> list[Reconsolidation]:
    best: dict[str, Reconsolidation] = {}
    for cluster in found:
        for fact, n in _said_in(cluster, stated).items():
            if n < PATTERN or fact.memory_type == "episodic":
                continue
            confidence = round(min(1.0, fact.confidence + BOOST * (n - 2)), 6)
            held = best.get(fact.fact_id)
            if confidence > fact.confidence and (held is None or n > held.occurrences):
                best[fact.fact_id] = Reconsolidation(fact.fact_id, confidence, n, cluster)
    return [best[f] for f in sorted(best)]


def _distilled(
    cluster: tuple[str, ...],
    members: Sequence[Episode],
    stated: Mapping[str, list[Fact]],
    links: Mapping[frozenset[str], list[Fact]],
    linked: set[frozenset[str]],
    names: Mapping[str, str],
) -> list[Distilled]:
    seen = Counter(entity for e in members for entity in set(e.entities))
    if not seen:
        return []
    said = _said_in(cluster, stated)
    degree = _degrees(said)
    hub = min(seen, key=lambda entity: (-seen[entity], -degree[entity], entity))
    together = Counter(entity for e in members if hub in e.entities for entity in set(e.entities) - {hub})
    found: list[Distilled] = []
    for other in sorted(together, key=lambda entity: (-together[entity], -degree[entity], entity)):
        n = together[other]
        if n < PATTERN or len(found) == MAX_DISTILLED:
            break
        if frozenset((hub, other)) in linked:
            continue  # a standing fact knows it already
        linking = links.get(frozenset((hub, other)), [])
        evidence = {f: said[f] for f in linking if said[f]}
        found.append(_distil(hub, other, n, cluster, evidence, names))
    return found


def _degrees(facts: Iterable[Fact]) -> Counter[str]:
    """Each entity's distinct neighbours in `facts`."""
    neighbours: dict[str, set[str]] = {}
    for fact in facts:
        if fact.target is not None and fact.target != fact.source:
            neighbours.setdefault(fact.source, set()).add(fact.target)
            neighbours.setdefault(fact.target, set()).add(fact.source)
    return Counter({entity: len(others) for entity, others in neighbours.items()})


def _distil(
    hub: str,
    other: str,
    n: int,
    cluster: tuple[str, ...],
    evidence: Mapping[Fact, int],
    names: Mapping[str, str],
) -> Distilled:
    """The semantic fact of a hub found with another entity in n of a cluster's episodes, from
    the facts linking them there (each with the episodes that stated it)."""
    confidence = round(min(0.9, 0.6 + 0.1 * (n - 2)), 6)
    ways: Counter[tuple[str, str, str]] = Counter()
    for fact, times in evidence.items():
        ways[(fact.source, fact.relation, fact.target or other)] += times
    together = f"together in {n} recent sessions"
    if ways:
        source, relation, target = min(ways, key=lambda way: (-ways[way], way))
        said = relation.replace("_", " ")
        description = (
            f"{names.get(source, source)} consistently {said} {names.get(target, target)}: {together}"
        )
    else:
        source, relation, target = hub, "related_to", other
        description = f"{names.get(hub, hub)} is closely related to {names.get(other, other)}: {together}"
    facts = tuple(sorted(f.fact_id for f in evidence))
    return Distilled(source, target, relation, description, confidence, cluster, facts)


def duplicates(facts: Sequence[Fact]) -> list[tuple[str, str]]:
    """Light consolidation: (duplicate, kept) for the facts that say the same thing about the
    same entities (source, relation, target) word for word, but for case and spacing. The
    smallest fact id is kept, the others point to it; sorted."""
    groups: dict[tuple[str, str, str | None, str], list[str]] = {}
    for fact in facts:
        words = " ".join(fact.description.casefold().split())
        groups.setdefault((fact.source, fact.relation, fact.target, words), []).append(fact.fact_id)
    pairs = []
    for ids in groups.values():
        kept, *others = sorted(set(ids))
        pairs += [(other, kept) for other in others]
    return sorted(pairs)


def skills(procedures: Sequence[Procedure], embeddings: Mapping[str, np.ndarray]) -> list[tuple[str, str]]:
    """Skill consolidation: (other, best) for the procedures whose embeddings' cosine reaches
    SAME_PROCEDURE (0.85), grouped as connected components. In each group the best success rate
    (Laplace's (successes + 1) / (judged uses + 2): an untried procedure counts 0.5, not a
    perfect score) is kept, ties going to more evidence (judged
    uses), then the smallest id; the others point to it. Procedures without an embedding, or
    with a zero one, are left out; sorted."""
    known = [
        p
        for p in sorted(procedures, key=lambda p: p.fact_id)
        if p.fact_id in embeddings and np.any(np.asarray(embeddings[p.fact_id]))
    ]
    if len(known) < 2:
        return []
    vectors = np.stack([np.asarray(embeddings[p.fact_id], dtype=np.float64) for p in known])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    close = np.triu(vectors @ vectors.T >= SAME_PROCEDURE, 1)
    links = [(known[i].fact_id, known[j].fact_id) for i, j in zip(*np.nonzero(close), strict=True)]
    by_id = {p.fact_id: p for p in known}
    pairs = []
    for group in _components(by_id, links):
        members = [by_id[f] for f in group]
        best = min(members, key=lambda p: (-_success_rate(p), -(p.successes + p.failures), p.fact_id))
        pairs += [(p.fact_id, best.fact_id) for p in members if p is not best]
    return sorted(pairs)


def _success_rate(procedure: Procedure) -> float:
    judged = procedure.successes + procedure.failures
    return (procedure.successes + 1) / (judged + 2)
