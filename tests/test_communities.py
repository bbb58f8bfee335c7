"""Label propagation on known graphs: two cliques joined by a bridge are two communities, the hub
names each, the internal facts are listed, and the order of the facts changes nothing."""

import random

from workers.dynamics.communities import Edge, communities, community_id


def clique(names: str, tag: str) -> list[Edge]:
    return [Edge(a, b, f"{tag}:{a}{b}") for i, a in enumerate(names) for b in names[i + 1 :]]


def test_two_cliques_joined_by_a_bridge_are_two_communities() -> None:
    edges = [*clique("abcd", "x"), *clique("wxyz", "y"), Edge("d", "w", "bridge")]
    first, second = communities(edges)
    assert (first.members, second.members) == (tuple("abcd"), tuple("wxyz"))
    assert (first.hub, second.hub) == ("d", "w")  # the bridge's ends have the most connections
    assert "bridge" not in first.facts + second.facts  # it lies between them, in neither
    assert first.facts == tuple(sorted(e.fact_id for e in clique("abcd", "x")))
    assert first.community_id == community_id(["d", "c", "b", "a"])


def test_a_pair_is_a_community_and_a_lone_node_none() -> None:
    [pair] = communities([Edge("a", "b", "f1"), Edge("c", "c", "self")])
    assert (pair.members, pair.hub, pair.facts) == (("a", "b"), "a", ("f1",))
    assert communities([]) == []


def test_the_order_of_the_facts_changes_nothing() -> None:
    edges = [*clique("abcde", "x"), *clique("fghi", "y"), Edge("e", "f", "b1"), Edge("a", "j", "t")]
    shuffled = edges[:]
    random.Random(3).shuffle(shuffled)
    assert communities(edges) == communities(shuffled)


def test_a_path_settles_within_five_rounds() -> None:
    # a chain of 8: propagation from the smallest labels, stopped after 5 rounds
    chain = [Edge(f"n{i}", f"n{i + 1}", f"f{i}") for i in range(7)]
    found = communities(chain)
    assert sorted(m for c in found for m in c.members) == sorted(f"n{i}" for i in range(8))
    assert all(len(c.members) >= 2 for c in found)
