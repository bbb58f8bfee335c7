"""Communities of entities, after HORA: the connected components of 2 or more entities of a
project's fact graph, refined by at most 5 rounds of label propagation; the hub (the member with
the most distinct neighbours, ties: the smallest id) names each, and its internal facts (both ends
inside) are listed. Largest first, then by members.

HORA's propagation: every entity starts as its own label; each round visits the entities one by
one and each takes at once the label most of its neighbours carry (its own has no priority); it
stops after 5 rounds or one that changed nothing. HORA visits breadth first from the order its
files hold and, between labels carried equally, keeps the first met, so its result depends on the
order facts were written. Here entities are visited, and neighbours met, in id order, and between labels
carried equally the one whose carriers share the most neighbours with the entity wins before the
first met: with only HORA's rule, in id order, the first entity of a dense group that a lone
bridge reaches takes the bridge's label and the whole group follows it (two cliques joined by
one fact become one community). The same graph gives the same communities on any machine,
whatever order its facts come in.

networkx builds the graph and finds its components and degrees. The propagation is written here
because none of networkx's is deterministic with a fixed number of rounds: `asyn_lpa_communities`
and `fast_label_propagation_communities` visit and break ties at random (a seed fixes them to one
interpreter's generator, never to HORA's order), and `label_propagation_communities` visits sets
of nodes, whose order follows string hashing (PYTHONHASHSEED), all run to convergence.

Costs: O(rounds x sum of degree^2) for the shared neighbours, which a project's graph of a few
thousand entities keeps to milliseconds.

Recomputed as events (`communities_of`, the job's reader): each community found is a
`community.detected`, its id a digest of its members, and one the snapshot holds that is no
longer found is dissolved (no members).
"""

import hashlib
from collections.abc import Iterator, Sequence

import duckdb
import msgspec
import networkx as nx

from schemas import kinds, memory
from workers.thinking.follower import Derived

ITERATIONS = 5


class Edge(msgspec.Struct, frozen=True):
    source: str
    target: str
    fact_id: str


class Community(msgspec.Struct, frozen=True):
    community_id: str
    members: tuple[str, ...]  # sorted
    hub: str
    facts: tuple[str, ...]  # internal fact ids, sorted


def communities(edges: Sequence[Edge], iterations: int = ITERATIONS) -> list[Community]:
    """The communities of the graph `edges` make (see the module's docstring)."""
    graph = _graph(edges)
    labels: dict[str, str] = {}
    for component in nx.connected_components(graph):
        if len(component) >= 2:
            labels.update(propagated(graph, component, iterations))
    groups: dict[str, list[str]] = {}
    for node in sorted(labels):
        groups.setdefault(labels[node], []).append(node)
    found = [_community(graph, edges, members) for members in groups.values() if len(members) >= 2]
    return sorted(found, key=lambda c: (-len(c.members), c.members))


def propagated(graph: nx.Graph, members: set[str], iterations: int = ITERATIONS) -> dict[str, str]:
    """Each member's label after at most `iterations` rounds of propagation within `members`."""
    order = sorted(members)
    labels = {node: node for node in order}
    neighbours = {node: sorted(graph.neighbors(node)) for node in order}
    for _ in range(iterations):
        changed = False
        for node in order:
            best = _best_label(node, neighbours, labels)
            if best != labels[node]:
                labels[node], changed = best, True
        if not changed:
            break
    return labels


def _best_label(node: str, neighbours: dict[str, list[str]], labels: dict[str, str]) -> str:
    around = set(neighbours[node])
    carried: dict[str, tuple[int, int, int]] = {}  # label: (carriers, neighbours they share, first met)
    for met, other in enumerate(neighbours[node]):
        count, shared, first = carried.get(labels[other], (0, 0, met))
        carried[labels[other]] = (count + 1, shared + len(around.intersection(neighbours[other])), first)
    return min(carried, key=lambda label: (-carried[label][0], -carried[label][1], carried[label][2]))


def community_id(members: Sequence[str]) -> str:
    return "community:" + hashlib.blake2b("\0".join(sorted(members)).encode(), digest_size=10).hexdigest()


def _graph(edges: Sequence[Edge]) -> nx.Graph:
    # a fact of an entity about itself links it to no other: no self-loops, which would count
    # towards its degree and vote for its own label
    graph = nx.Graph()
    graph.add_edges_from(sorted((e.source, e.target) for e in edges if e.source != e.target))
    return graph


def _community(graph: nx.Graph, edges: Sequence[Edge], members: list[str]) -> Community:
    inside = set(members)
    hub = min(members, key=lambda m: (-graph.degree[m], m))
    facts = sorted({e.fact_id for e in edges if e.source in inside and e.target in inside})
    return Community(community_id(members), tuple(sorted(members)), hub, tuple(facts))


def communities_of(db: duckdb.DuckDBPyConnection) -> Iterator[Derived]:
    """The communities of every project's standing facts between entities, as events, and the
    dissolution of those the snapshot holds that are no longer found."""
    rows = db.execute(
        """
        SELECT f.project, f.source, f.target, f.fact_id, f.updated_by
        FROM facts_current f
        JOIN entities s ON s.entity_id = f.source JOIN entities t ON t.entity_id = f.target
        WHERE f.project IS NOT NULL
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
