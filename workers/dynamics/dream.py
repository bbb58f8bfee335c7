"""The dream cycle, after HORA's hippocampal replay: what recent episodes have in common becomes
semantic memory.

- **Replay**: the episodes of the last 7 days not yet consolidated, and only when there are at
  least 5.
- **Clusters**: two episodes go together when they share 2 or more entities, or when
  scikit-learn's HDBSCAN puts their embeddings in one cluster (cosine, min_cluster_size 3,
  min_samples 1; noise skipped); a cluster is a connected group of 2 or more episodes.
- **Reconsolidation**: a fact stated in 3 or more of a cluster's episodes gains 0.05 confidence
  per episode beyond 2 (at most 1.0).
- **Distillation**: the cluster's hub is the entity in most of its episodes (ties: the smallest
  id); each other entity found with it in 3 or more of them, the most often first, gives a
  semantic fact from the hub to it, at most 3 a cluster, with confidence min(0.9, 0.6 + 0.1
  (n - 2)), n the episodes they share: the relation and words of the longest fact already
  linking them, else `related_to`. A link a standing fact already states is not distilled again.
- **Consolidation**: each cluster's episodes are consolidated into one.

`duplicates` (light consolidation) and `skills` (skill consolidation) find what other facts
stand for. Pure and deterministic: the same inputs, in any order, give the same outputs.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import msgspec
import networkx as nx
import numpy as np
from sklearn.cluster import HDBSCAN

MIN_EPISODES = 5
WINDOW = timedelta(days=7)
SHARED_ENTITIES = 2
PATTERN = 3  # episodes a fact or a pair of entities must recur in
MAX_DISTILLED = 3
BOOST = 0.05
SAME_PROCEDURE = 0.85  # cosine of two procedures that do the same thing


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
    confidence: float
    occurrences: int
    cluster: tuple[str, ...]


class Distilled(msgspec.Struct, frozen=True):
    source: str
    target: str
    relation: str
    description: str
    confidence: float
    cluster: tuple[str, ...]
    evidence: tuple[str, ...]  # the facts behind it


class Dream(msgspec.Struct, frozen=True):
    clusters: list[tuple[str, ...]]
    reconsolidated: list[Reconsolidation]
    distilled: list[Distilled]
    consolidated: list[str]


def dream(
    episodes: Sequence[Episode],
    facts: Sequence[Fact],
    entities: Sequence[Entity],
    embeddings: Mapping[str, np.ndarray] | None,
    now: datetime,
) -> Dream:
    """The whole cycle over the episodes of the last WINDOW before `now` (see the docstring)."""
    recent = sorted((e for e in episodes if now - WINDOW <= e.ended_at <= now), key=lambda e: e.episode_id)
    if len(recent) < MIN_EPISODES:
        return Dream([], [], [], [])
    found = clusters(recent, embeddings)
    by_id = {e.episode_id: e for e in recent}
    names = {e.entity_id: e.name for e in entities}
    reconsolidated, distilled = [], []
    for cluster in found:
        members = [by_id[e] for e in cluster]
        reconsolidated += _reconsolidated(cluster, facts)
        distilled += _distilled(cluster, members, facts, names)
    return Dream(found, reconsolidated, distilled, sorted(e for c in found for e in c))


def clusters(
    episodes: Sequence[Episode], embeddings: Mapping[str, np.ndarray] | None
) -> list[tuple[str, ...]]:
    """The episodes that go together (see the docstring), each cluster sorted, clusters sorted."""
    graph = nx.Graph()
    ordered = sorted(episodes, key=lambda e: e.episode_id)
    graph.add_nodes_from(e.episode_id for e in ordered)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if len(set(a.entities) & set(b.entities)) >= SHARED_ENTITIES:
                graph.add_edge(a.episode_id, b.episode_id)
    for group in _by_meaning([e.episode_id for e in ordered], embeddings or {}):
        nx.add_path(graph, group)
    return sorted(tuple(sorted(c)) for c in nx.connected_components(graph) if len(c) >= 2)


def _by_meaning(episode_ids: list[str], embeddings: Mapping[str, np.ndarray]) -> list[list[str]]:
    known = [e for e in episode_ids if e in embeddings]
    if len(known) < PATTERN:
        return []
    vectors = np.stack([embeddings[e] for e in known]).astype(np.float64)
    labels = HDBSCAN(metric="cosine", min_cluster_size=3, min_samples=1, copy=True).fit(vectors).labels_
    groups: dict[int, list[str]] = {}
    for episode_id, label in zip(known, labels, strict=True):
        if label >= 0:  # -1: noise
            groups.setdefault(int(label), []).append(episode_id)
    return [groups[k] for k in sorted(groups)]


def _reconsolidated(cluster: tuple[str, ...], facts: Sequence[Fact]) -> list[Reconsolidation]:
    inside = set(cluster)
    found = []
    for fact in sorted(facts, key=lambda f: f.fact_id):
        n = len(inside & set(fact.episode_ids))
        if n >= PATTERN:
            confidence = round(min(1.0, fact.confidence + BOOST * (n - 2)), 6)
            if confidence > fact.confidence:
                found.append(Reconsolidation(fact.fact_id, confidence, n, cluster))
    return found


def _distilled(
    cluster: tuple[str, ...], members: list[Episode], facts: Sequence[Fact], names: Mapping[str, str]
) -> list[Distilled]:
    seen = Counter(entity for e in members for entity in set(e.entities))
    if not seen:
        return []
    hub = min(seen, key=lambda entity: (-seen[entity], entity))
    together = Counter(entity for e in members if hub in e.entities for entity in set(e.entities) - {hub})
    found: list[Distilled] = []
    for other in sorted(together, key=lambda entity: (-together[entity], entity)):
        n = together[other]
        if n < PATTERN or len(found) == MAX_DISTILLED:
            break
        if any(_links(f, hub, other) and f.memory_type == "semantic" for f in facts):
            continue  # a standing fact says it already
        linking = sorted(
            (f for f in facts if _links(f, hub, other)), key=lambda f: (-len(f.description), f.fact_id)
        )
        relation = linking[0].relation if linking else "related_to"
        description = (
            linking[0].description
            if linking
            else f"{names.get(hub, hub)} goes with {names.get(other, other)}: together in {n} recent sessions"
        )
        confidence = round(min(0.9, 0.6 + 0.1 * (n - 2)), 6)
        evidence = tuple(sorted(f.fact_id for f in linking))
        found.append(Distilled(hub, other, relation, description, confidence, cluster, evidence))
    return found


def _links(fact: Fact, a: str, b: str) -> bool:
    return {fact.source, fact.target} == {a, b}


def duplicates(facts: Sequence[Fact]) -> list[tuple[str, str]]:
    """Light consolidation: (duplicate, kept) for facts that say the same thing about the same
    entities, word for word but for case and spacing; the smallest id is kept."""
    groups: dict[tuple[str, str, str | None, str], list[str]] = {}
    for fact in facts:
        said = " ".join(fact.description.lower().split())
        groups.setdefault((fact.source, fact.relation, fact.target, said), []).append(fact.fact_id)
    pairs = []
    for ids in groups.values():
        kept, *others = sorted(ids)
        pairs += [(other, kept) for other in others]
    return sorted(pairs)


class Procedure(msgspec.Struct, frozen=True):
    fact_id: str
    description: str
    successes: int
    failures: int


def skills(procedures: Sequence[Procedure], embeddings: Mapping[str, np.ndarray]) -> list[tuple[str, str]]:
    """Skill consolidation: procedures whose embeddings' cosine reaches SAME_PROCEDURE form
    groups (connected); in each, the best success rate (ties: more evidence, then the smallest
    id) is kept, and each other points to it: (other, best)."""
    known = sorted((p for p in procedures if p.fact_id in embeddings), key=lambda p: p.fact_id)
    if len(known) < 2:
        return []
    vectors = np.stack([embeddings[p.fact_id] for p in known])
    close = (vectors @ vectors.T) >= SAME_PROCEDURE
    graph = nx.Graph()
    graph.add_nodes_from(range(len(known)))
    graph.add_edges_from((int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(close, 1)), strict=True))
    pairs = []
    for group in nx.connected_components(graph):
        if len(group) < 2:
            continue
        members = [known[i] for i in group]
        best = min(members, key=lambda p: (-_success_rate(p), -(p.successes + p.failures), p.fact_id))
        pairs += [(p.fact_id, best.fact_id) for p in members if p is not best]
    return sorted(pairs)


def _success_rate(procedure: Procedure) -> float:
    total = procedure.successes + procedure.failures
    return procedure.successes / total if total else 0.0
