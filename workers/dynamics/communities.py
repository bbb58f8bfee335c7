"""Communities of entities (every 6 hours), after HORA: the connected components of 2 or more
entities of each project's fact graph, refined by 5 rounds of label propagation; the hub (the
member with the most connections) names each, and its internal facts are listed.

The graph and its components are networkx's. The propagation is written here: networkx's label
propagation runs to convergence, in a random order (`asyn_lpa_communities`) or one its
colouring decides (`label_propagation_communities`), where HORA's rule is 5 rounds in a fixed
order. Here the order is the members' ids, and every node takes the label its neighbours carry
most, each neighbour counting 1 plus the neighbours they share (so a lone bridge between two
dense groups carries little; ties: the smallest label); it stops early when nothing changes.
The same graph gives the same communities on any machine, whatever order its facts come in.

Recomputed as events: each community found is a `community.detected` (its id a digest of its
members), and one the snapshot holds that is no longer found is dissolved (no members).
"""

import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence

import duckdb
import msgspec
import networkx as nx

from schemas import kinds, memory
from workers.extraction.derive import Derived

ROUNDS = 5


class Edge(msgspec.Struct, frozen=True):
    source: str
    target: str
    fact_id: str


class Community(msgspec.Struct, frozen=True):
    community_id: str
    members: tuple[str, ...]
    hub: str
    facts: tuple[str, ...]  # internal fact ids


def communities(edges: Sequence[Edge], rounds: int = ROUNDS) -> list[Community]:
    """The communities of the graph `edges` make (see the module's docstring), largest first."""
    graph = nx.Graph()
    graph.add_edges_from((e.source, e.target) for e in edges if e.source != e.target)
    labels: dict[str, str] = {}
    for component in nx.connected_components(graph):
        if len(component) >= 2:
            labels.update(_propagated(graph, sorted(component), rounds))
    groups: dict[str, list[str]] = {}
    for node, label in labels.items():
        groups.setdefault(label, []).append(node)
    found = []
    for members in groups.values():
        if len(members) < 2:
            continue
        inside = set(members)
        hub = max(sorted(members), key=lambda m: graph.degree[m])  # ties: the smallest id
        facts = sorted({e.fact_id for e in edges if e.source in inside and e.target in inside})
        found.append(Community(community_id(members), tuple(sorted(members)), hub, tuple(facts)))
    return sorted(found, key=lambda c: (-len(c.members), c.community_id))


def _propagated(graph: nx.Graph, members: list[str], rounds: int) -> dict[str, str]:
    labels = {m: m for m in members}
    neighbours = {m: set(graph.neighbors(m)) for m in members}
    for _ in range(rounds):
        changed = False
        for node in members:
            counts: Counter[str] = Counter()
            for other in sorted(neighbours[node]):
                counts[labels[other]] += 1 + len(neighbours[node] & neighbours[other])
            best = min(counts, key=lambda label: (-counts[label], label))
            if best != labels[node]:
                labels[node], changed = best, True
        if not changed:
            break
    return labels


def community_id(members: Sequence[str]) -> str:
    return "community:" + hashlib.blake2b("\0".join(sorted(members)).encode(), digest_size=10).hexdigest()


def communities_of(db: duckdb.DuckDBPyConnection) -> Iterator[Derived]:
    """The communities of every project's standing facts between entities, as events, and the
    dissolution of those the snapshot holds that are no longer found."""
    rows = db.execute(
        """
        SELECT f.project, f.source, f.target, f.fact_id, f.updated_by
        FROM facts_current f
        JOIN entities s ON s.entity_id = f.source JOIN entities t ON t.entity_id = f.target
        WHERE f.project IS NOT NULL AND f.superseded_by IS NULL
        ORDER BY f.project, f.fact_id
        """
    ).fetchall()
    names = dict(db.execute("SELECT entity_id, name FROM entities").fetchall())
    by_project: dict[str, list[tuple[Edge, str]]] = {}
    for project, source, target, fact_id, updated_by in rows:
        by_project.setdefault(project, []).append((Edge(source, target, fact_id), updated_by))
    found: dict[str, set[str]] = {}
    for project, edges in sorted(by_project.items()):
        events = {edge.fact_id: by for edge, by in edges}
        for community in communities([edge for edge, _ in edges]):
            found.setdefault(project, set()).add(community.community_id)
            payload = memory.CommunityDetected(
                community_id=community.community_id,
                members=list(community.members),
                label=names.get(community.hub, community.hub),
                hub=community.hub,
                facts=list(community.facts),
            )
            causes = tuple(sorted({events[f] for f in community.facts}))
            yield Derived(kinds.COMMUNITY_DETECTED, payload, project, causes, None, community.community_id)
    yield from _dissolved(db, found)


def _dissolved(db: duckdb.DuckDBPyConnection, found: dict[str, set[str]]) -> Iterator[Derived]:
    held = db.execute(
        "SELECT community_id, project, updated_by FROM communities WHERE len(members) > 0 ORDER BY 1"
    ).fetchall()
    for community_id_, project, updated_by in held:
        if community_id_ not in found.get(project, set()):
            payload = memory.CommunityDetected(community_id=community_id_, members=[], label="dissolved")
            yield Derived(
                kinds.COMMUNITY_DETECTED, payload, project, (updated_by,), None, f"{community_id_}:dissolved"
            )
