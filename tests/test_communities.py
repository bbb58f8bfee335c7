"""Label propagation on known graphs: two cliques joined by a bridge are two communities, a pair is
one and a lone entity none, the hub names each and the internal facts are listed, at most 5
rounds run, and the order of the facts changes nothing."""

import random
from itertools import pairwise

from workers.dynamics.communities import Edge, communities, community_id


def clique(names: str, tag: str) -> list[Edge]:
    return [Edge(a, b, f"{tag}:{a}{b}") for i, a in enumerate(names) for b in names[i + 1 :]]


def path(names: list[str]) -> list[Edge]:
    return [Edge(a, b, f"f{i}") for i, (a, b) in enumerate(pairwise(names))]


def test_two_cliques_joined_by_a_bridge_are_two_communities() -> None:
    # HORA's tie-break alone (the first label met) would carry the bridge's label into w's clique
    edges = [*clique("abcd", "x"), *clique("wxyz", "y"), Edge("d", "w", "bridge")]
    first, second = communities(edges)
    assert (first.members, second.members) == (tuple("abcd"), tuple("wxyz"))
    assert (first.hub, second.hub) == ("d", "w")  # the bridge's ends have the most connections
    assert "bridge" not in first.facts + second.facts  # it lies between them, in neither
    assert first.facts == tuple(sorted(e.fact_id for e in clique("abcd", "x")))
    assert first.community_id == community_id(["d", "c", "b", "a"])
    assert first.community_id.startswith("community:") and first.community_id != second.community_id


def test_horas_triangle_and_pair() -> None:
    # HORA's own graph: a triangle, a pair, and an entity with no facts (never in an edge)
    edges = [
        Edge("neuralmemorymap", "react-force-graph", "f1"),
        Edge("react-force-graph", "d3-force-3d", "f2"),
        Edge("neuralmemorymap", "d3-force-3d", "f3"),
        Edge("hora", "typescript", "f4"),
    ]
    triangle, pair = communities(edges)
    assert triangle.members == ("d3-force-3d", "neuralmemorymap", "react-force-graph")
    assert triangle.hub == "d3-force-3d"  # all of degree 2: the smallest id
    assert triangle.facts == ("f1", "f2", "f3")
    assert (pair.members, pair.hub, pair.facts) == (("hora", "typescript"), "hora", ("f4",))


def test_a_pair_is_a_community_and_a_lone_node_none() -> None:
    [pair] = communities([Edge("b", "a", "f1"), Edge("c", "c", "self")])
    assert (pair.members, pair.hub, pair.facts) == (("a", "b"), "a", ("f1",))
    assert communities([Edge("c", "c", "self")]) == []
    assert communities([]) == []


def test_a_fact_of_a_member_about_itself_is_internal() -> None:
    [pair] = communities([Edge("a", "b", "f1"), Edge("a", "a", "f2"), Edge("a", "b", "f3")])
    assert pair.facts == ("f1", "f2", "f3")
    assert pair.hub == "a"  # two facts to b and one to itself: one neighbour, as b has


def test_the_hub_has_the_most_distinct_neighbours() -> None:
    star = [Edge("x", "hub", "f1"), Edge("hub", "y", "f2"), Edge("hub", "z", "f3"), Edge("x", "y", "f4")]
    # a has two facts, both with x: one neighbour; x has three (hub, y, a), as the hub does
    [found] = communities([*star, Edge("a", "x", "f5"), Edge("x", "a", "f6")])
    assert found.members == ("a", "hub", "x", "y", "z")
    assert found.hub == "hub"  # ties: the smallest id
    [found] = communities([*star, Edge("a", "x", "f5"), Edge("b", "x", "f6")])
    assert found.hub == "x"  # four neighbours


def test_at_most_five_rounds_run() -> None:
    # along p0 q0 p1 q1 ... p6 q6, visited in id order (every p before every q), each round
    # brings one more pair into p0's community: the sixth pair would need a sixth round
    chain = path([name for k in range(7) for name in (f"p{k}", f"q{k}")])
    capped = [c.members for c in communities(chain)]
    assert capped == [tuple(sorted(f"{x}{k}" for k in range(6) for x in "pq")), ("p6", "q6")]
    assert [c.members for c in communities(chain, iterations=6)] == [
        tuple(sorted(f"{x}{k}" for k in range(7) for x in "pq"))
    ]
    assert len(communities(chain, iterations=1)) == 6  # one pair joined per round
    assert communities(chain, iterations=0) == []  # every entity still its own label


def test_the_order_of_the_facts_changes_nothing() -> None:
    edges = [*clique("abcde", "x"), *clique("fghi", "y"), Edge("e", "f", "b1"), Edge("a", "j", "t")]
    expected = communities(edges)
    assert [c.members for c in expected] == [tuple("abcdej"), tuple("fghi")]
    for seed in range(5):
        shuffled = [Edge(e.target, e.source, e.fact_id) if i % 2 else e for i, e in enumerate(edges)]
        random.Random(seed).shuffle(shuffled)
        assert communities(shuffled) == expected
