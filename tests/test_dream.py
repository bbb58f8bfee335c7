"""The dream cycle against the seed's react-force-graph example, and its rules: at least 5 recent
episodes, clusters by shared entities and by HDBSCAN, reconsolidation of recurring facts, at most
3 distilled facts a cluster; light and skill consolidation."""

import random
from datetime import UTC, datetime, timedelta

import numpy as np

from workers.dynamics.dream import (
    Entity,
    Episode,
    Fact,
    Procedure,
    clusters,
    dream,
    duplicates,
    skills,
)

NOW = datetime(2026, 11, 20, tzinfo=UTC)
RFG, USER, D3, FORCES = (
    "entity:library:react-force-graph",
    "entity:person:user",
    "entity:library:d3",
    "entity:concept:forces",
)
NAMES = [
    Entity(RFG, "react-force-graph"),
    Entity(USER, "the user"),
    Entity(D3, "D3"),
    Entity(FORCES, "custom forces"),
]


def episode(n: int, *entities: str, days_ago: float = 1) -> Episode:
    return Episode(f"ep{n}", NOW - timedelta(days=days_ago), tuple(entities), "/p")


def seed_example() -> list[Episode]:
    """The seed's: "User used react-force-graph for visualization", "User chose react-force-graph
    over D3 directly", "User extended react-force-graph with custom forces"; and two others."""
    return [
        episode(1, USER, RFG),
        episode(2, USER, RFG, D3),
        episode(3, USER, RFG, FORCES),
        episode(4, "entity:file:README.md"),
        episode(5, "entity:tool:git"),
    ]


def test_the_seeds_react_force_graph_example_distils_one_semantic_fact_at_0_7() -> None:
    found = dream(seed_example(), [], NAMES, None, NOW)
    assert found.clusters == [("ep1", "ep2", "ep3")]
    [distilled] = found.distilled
    assert (distilled.source, distilled.target, distilled.confidence) == (RFG, USER, 0.7)
    assert distilled.description == "react-force-graph goes with the user: together in 3 recent sessions"
    assert found.consolidated == ["ep1", "ep2", "ep3"]


def test_fewer_than_five_recent_episodes_do_nothing() -> None:
    old = [*seed_example()[:4], episode(5, "entity:tool:git", days_ago=8)]
    assert dream(old, [], NAMES, None, NOW).clusters == []
    assert dream(seed_example()[:4], [], NAMES, None, NOW).distilled == []


def test_a_fact_recurring_across_a_cluster_is_reconsolidated() -> None:
    stated = Fact(
        "f1", USER, RFG, "uses", "The user uses react-force-graph", 0.6, "semantic", ("ep1", "ep2", "ep3")
    )
    twice = Fact("f2", USER, D3, "uses", "The user knows D3", 0.6, "semantic", ("ep1", "ep2"))
    found = dream(seed_example(), [stated, twice], NAMES, None, NOW)
    [again] = found.reconsolidated
    assert (again.fact_id, again.confidence, again.occurrences) == ("f1", 0.65, 3)  # +0.05 for 1 beyond 2
    assert found.distilled == []  # the link is already a standing semantic fact
    four = [*seed_example(), episode(6, USER, RFG)]
    stated_4 = Fact("f1", USER, RFG, "uses", "uses", 0.97, "semantic", ("ep1", "ep2", "ep3", "ep6"))
    assert dream(four, [stated_4], NAMES, None, NOW).reconsolidated[0].confidence == 1.0  # capped


def test_at_most_three_facts_are_distilled_from_a_cluster() -> None:
    many = [f"entity:concept:c{i}" for i in range(6)]
    episodes = [episode(n, RFG, *many) for n in range(5)]
    found = dream(episodes, [], NAMES, None, NOW)
    assert len(found.distilled) == 3 and {d.confidence for d in found.distilled} == {0.9}  # n = 5: capped


def test_hdbscan_clusters_the_episodes_that_mean_alike_and_skips_the_noise() -> None:
    rng = np.random.default_rng(1)
    centres = np.eye(16)[:3]
    episodes, vectors = [], {}
    for n in range(12):
        episodes.append(episode(n, f"entity:x:{n}"))
        v = centres[n % 3] + rng.normal(0, 0.02, 16)
        vectors[f"ep{n}"] = v / np.linalg.norm(v)
    for n, lone in ((98, np.eye(16)[9]), (99, (np.eye(16)[12] + np.eye(16)[13]) / np.sqrt(2))):
        episodes.append(episode(n, f"entity:x:{n}"))  # each about something no other is
        vectors[f"ep{n}"] = lone
    found = clusters(episodes, vectors)
    assert sorted(len(c) for c in found) == [4, 4, 4]
    assert all({int(e[2:]) % 3 for e in c} == {int(c[0][2:]) % 3} for c in found)
    assert not any("ep98" in c or "ep99" in c for c in found)  # noise


def test_the_order_of_the_inputs_changes_nothing() -> None:
    episodes = seed_example()
    shuffled = episodes[:]
    random.Random(5).shuffle(shuffled)
    assert dream(episodes, [], NAMES, None, NOW) == dream(shuffled, [], list(reversed(NAMES)), None, NOW)


def test_exact_duplicates_point_to_the_one_kept() -> None:
    facts = [
        Fact("f2", "a", "b", "uses", "Uses  PyTest", 1.0, "semantic", ()),
        Fact("f1", "a", "b", "uses", "uses pytest", 1.0, "semantic", ()),
        Fact("f3", "a", "c", "uses", "uses pytest", 1.0, "semantic", ()),  # another entity: not the same
    ]
    assert duplicates(facts) == [("f2", "f1")]


def test_similar_procedures_point_to_the_one_that_succeeds_most() -> None:
    same = np.array([1.0, 0.0]), np.array([0.99, np.sqrt(1 - 0.99**2)])
    other = np.array([0.0, 1.0])
    procedures = [
        Procedure("p1", "run pytest -x then fix", 2, 2),
        Procedure("p2", "run pytest -x and fix", 3, 0),
        Procedure("p3", "deploy with fly", 1, 0),
    ]
    vectors = {"p1": same[0], "p2": same[1], "p3": other}
    assert skills(procedures, vectors) == [("p1", "p2")]
