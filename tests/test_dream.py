"""The dream cycle against HORA's react-force-graph example, and its rules: at least 5 episodes of
the last 7 days, clusters proposed by shared entities, shared title words and HDBSCAN, and kept
only where every member shares a named subject, reconsolidation of recurring facts, at most 3
distilled facts a cluster; light and skill consolidation."""

import random
from datetime import UTC, datetime, timedelta

import numpy as np

from workers.dynamics.dream import (
    Entity,
    Episode,
    Fact,
    Procedure,
    _by_meaning,
    clusters,
    dream,
    duplicates,
    skills,
    words_of,
)

NOW = datetime(2026, 11, 20, tzinfo=UTC)
# HORA names the library `tool:react-force-graph`: its id sorts after the user's, so the hub is
# the most connected entity, not the first by id
RFG, USER, D3, FORCES = (
    "entity:tool:react-force-graph",
    "entity:person:user",
    "entity:library:d3",
    "entity:concept:custom-forces",
)
NAMES = [
    Entity(RFG, "react-force-graph"),
    Entity(USER, "the user"),
    Entity(D3, "D3"),
    Entity(FORCES, "custom forces"),
]


def episode(n: int, *entities: str, days_ago: float = 1) -> Episode:
    return Episode(f"ep{n}", NOW - timedelta(days=days_ago), tuple(entities), "/p")


def fact(
    fact_id: str,
    source: str,
    relation: str,
    target: str | None,
    description: str,
    *episodes: str,
    confidence: float = 0.6,
    memory_type: str = "semantic",
) -> Fact:
    return Fact(fact_id, source, target, relation, description, confidence, memory_type, episodes)


def hora_example() -> tuple[list[Episode], list[Fact]]:
    """HORA's (MEMORY.md, "Dream Cycle"): "User used react-force-graph for visualization", "User
    chose react-force-graph over D3 directly", "User extended react-force-graph with custom
    forces", one session each (so episodic facts); and two sessions about other things."""
    episodes = [
        episode(1, USER, RFG),
        episode(2, USER, RFG, D3),
        episode(3, USER, RFG, FORCES),
        episode(4, "entity:file:README.md"),
        episode(5, "entity:tool:git"),
    ]
    stated = [
        ("f1", USER, "uses", RFG, "User used react-force-graph for visualization", "ep1"),
        ("f2", USER, "decided_for", RFG, "User chose react-force-graph over D3 directly", "ep2"),
        ("f3", FORCES, "extends", RFG, "Custom forces extend react-force-graph", "ep3"),
        ("f4", USER, "uses", RFG, "User extended react-force-graph with custom forces", "ep3"),
    ]
    return episodes, [fact(*said, memory_type="episodic") for said in stated]


def test_horas_react_force_graph_example_distils_one_semantic_fact_at_0_7() -> None:
    episodes, facts = hora_example()
    found = dream(episodes, facts, NAMES, None, NOW)
    assert found.clusters == [("ep1", "ep2", "ep3")]
    [distilled] = found.distilled
    assert (distilled.source, distilled.relation, distilled.target) == (USER, "uses", RFG)  # said in 2 of 3
    assert distilled.confidence == 0.7  # n = 3: min(0.9, 0.6 + 0.1)
    assert (
        distilled.description == "the user consistently uses react-force-graph: together in 3 recent sessions"
    )
    assert distilled.evidence == ("f1", "f2", "f4") and distilled.cluster == ("ep1", "ep2", "ep3")
    assert found.reconsolidated == []  # episodic facts never change
    assert found.consolidated == ["ep1", "ep2", "ep3"]  # ep4 and ep5 wait


def test_horas_example_as_its_code_would_store_it_distils_the_same_triple_at_0_7() -> None:
    """HORA's records for its example (a dashboard that uses react-force-graph, said in 3
    sessions; its dream cycle distils the triple dashboard uses react-force-graph at 0.7). HORA
    expires the 3 statements; here they stand as episodic facts."""
    d, r, x, y = "d0a1b2c3", "r0a1b2c3", "x1111111", "y2222222"
    names = [Entity(d, "dashboard"), Entity(r, "react-force-graph"), Entity(x, "vite"), Entity(y, "recharts")]
    episodes = [
        Episode("e1", NOW - timedelta(days=3), (r, d), "/p"),
        Episode("e2", NOW - timedelta(days=2), (r, d), "/p"),
        Episode("e3", NOW - timedelta(days=1), (r, d), "/p"),
        Episode("e4", NOW - timedelta(days=1), (d, x), "/p"),
        Episode("e5", NOW - timedelta(hours=5), (y,), "/p"),
    ]
    said = [
        ("f1000001", d, "uses", r, "User used react-force-graph for visualization", "e1"),
        ("f1000002", d, "uses", r, "User chose react-force-graph over D3 directly", "e2"),
        ("f1000003", d, "uses", r, "User extended react-force-graph with custom forces", "e3"),
    ]
    facts = [fact(*s, confidence=0.8, memory_type="episodic") for s in said]
    facts += [fact("f1000004", d, "built_with", x, "built with vite", "e4", confidence=0.8)]
    facts += [fact("f1000005", d, "uses", y, "uses recharts", "e5", confidence=0.8)]
    found = dream(episodes, facts, names, None, NOW)
    assert found.clusters == [("e1", "e2", "e3")]  # e4 shares only the dashboard with them
    [distilled] = found.distilled
    assert (distilled.source, distilled.relation, distilled.target, distilled.confidence) == (
        d,
        "uses",
        r,
        0.7,
    )
    assert (
        distilled.description
        == "dashboard consistently uses react-force-graph: together in 3 recent sessions"
    )
    assert distilled.evidence == ("f1000001", "f1000002", "f1000003")
    assert found.reconsolidated == [] and found.consolidated == ["e1", "e2", "e3"]


def test_without_facts_the_hub_is_closely_related_to_the_entity_found_with_it() -> None:
    episodes, _ = hora_example()
    [distilled] = dream(episodes, [], NAMES, None, NOW).distilled
    # RFG and the user are in 3 episodes each, and nothing connects them: the smaller id is the hub
    assert (distilled.source, distilled.relation, distilled.target) == (USER, "related_to", RFG)
    assert (
        distilled.description
        == "the user is closely related to react-force-graph: together in 3 recent sessions"
    )
    assert (distilled.confidence, distilled.evidence) == (0.7, ())


def test_the_hub_is_the_most_connected_of_the_most_frequent_entities() -> None:
    episodes, _ = hora_example()
    # RFG is linked to custom forces and D3 by facts, the user to nothing: RFG is the hub
    facts = [
        fact("g1", FORCES, "extends", RFG, "Custom forces extend react-force-graph", "ep3"),
        fact("g2", RFG, "performs_better_than", D3, "react-force-graph beats raw D3 for graphs", "ep2"),
    ]
    [distilled] = dream(episodes, facts, NAMES, None, NOW).distilled
    assert (distilled.source, distilled.relation, distilled.target) == (RFG, "related_to", USER)


def test_a_link_a_standing_fact_knows_is_not_distilled() -> None:
    episodes, facts = hora_example()
    known = [*facts, fact("f9", RFG, "related_to", USER, "the user likes react-force-graph")]  # semantic
    assert dream(episodes, known, NAMES, None, NOW).distilled == []
    # said outside the window (or distilled by an earlier cycle): known all the same
    assert dream(episodes, facts, NAMES, None, NOW, known=[(RFG, USER)]).distilled == []
    assert dream(episodes, facts, NAMES, None, NOW, known=[(RFG, D3)]).distilled != []


def test_fewer_than_five_episodes_of_the_last_seven_days_do_nothing() -> None:
    episodes, facts = hora_example()
    four = dream(episodes[:4], facts, NAMES, None, NOW)
    assert (four.clusters, four.reconsolidated, four.distilled, four.consolidated) == ([], [], [], [])
    one_old = [*episodes[:4], episode(5, "entity:tool:git", days_ago=7.5)]
    assert dream(one_old, facts, NAMES, None, NOW).clusters == []
    one_ahead = [*episodes[:4], episode(5, "entity:tool:git", days_ago=-1)]  # after `now`
    assert dream(one_ahead, facts, NAMES, None, NOW).clusters == []
    assert dream(episodes, facts, NAMES, None, NOW).clusters == [("ep1", "ep2", "ep3")]


def test_episodes_older_than_seven_days_are_ignored() -> None:
    episodes, facts = hora_example()
    old = [episode(6, USER, RFG, days_ago=8), episode(7, USER, RFG, D3, days_ago=30)]
    found = dream([*episodes, *old], facts, NAMES, None, NOW)
    assert found.clusters == [("ep1", "ep2", "ep3")] and "ep6" not in found.consolidated
    edge = dream([*episodes, episode(6, USER, RFG, days_ago=7)], facts, NAMES, None, NOW)
    assert edge.clusters == [("ep1", "ep2", "ep3", "ep6")]  # exactly 7 days ago is in the window


def test_episodes_sharing_two_entities_cluster_as_connected_groups() -> None:
    a, b, c, d, e, f = "abcdef"
    episodes = [
        Episode("a", NOW, (a, b, c), "/p"),
        Episode("b", NOW, (b, c, d), "/p"),  # shares b, c with a
        Episode("c", NOW, (d, b, e), "/p"),  # shares b, d with b, and only b with a: still a's cluster
        Episode("d", NOW, (e, f), "/p"),  # shares only e with c
        Episode("e", NOW, (e, f, "x"), "/p"),  # shares e, f with d
        Episode("f", NOW, (a, "y"), "/p"),  # shares one entity with a: alone
    ]
    assert clusters(episodes, None) == [("a", "b", "c"), ("d", "e")]
    assert clusters(episodes[::-1], {}) == [("a", "b", "c"), ("d", "e")]


def three_groups_and_noise(prefix: str = "ep") -> tuple[list[Episode], dict[str, np.ndarray]]:
    """Twelve episodes about 3 subjects (4 each, near by their embeddings, and each naming its
    subject's entity, one entity in common: too few to propose them together) and 2 about
    nothing else."""
    rng = np.random.default_rng(1)
    centres = np.eye(16)[:3]
    episodes, vectors = [], {}
    for n in range(12):
        episodes.append(Episode(f"{prefix}{n}", NOW, (f"entity:x:{n}", f"entity:topic:{n % 3}"), "/p"))
        v = centres[n % 3] + rng.normal(0, 0.02, 16)
        vectors[f"{prefix}{n}"] = v / np.linalg.norm(v)
    for n, lone in ((98, np.eye(16)[9]), (99, (np.eye(16)[12] + np.eye(16)[13]) / np.sqrt(2))):
        episodes.append(Episode(f"{prefix}{n}", NOW, (f"entity:x:{n}",), "/p"))
        vectors[f"{prefix}{n}"] = lone
    return episodes, vectors


def test_hdbscan_clusters_the_episodes_that_mean_alike_and_skips_the_noise() -> None:
    episodes, vectors = three_groups_and_noise()
    found = clusters(episodes, vectors)
    assert found == sorted(tuple(sorted(f"ep{n}" for n in range(k, 12, 3))) for k in range(3))
    assert not any("ep98" in c or "ep99" in c for c in found)  # noise
    assert clusters(episodes, None) == []  # no embeddings, one shared entity: nothing proposes them
    # near by their embeddings alone, sharing no subject: nothing
    alone = [Episode(e.episode_id, e.ended_at, e.entities[:1], "/p") for e in episodes]
    assert clusters(alone, vectors) == []


def test_hdbscan_needs_three_embeddings() -> None:
    episodes, vectors = three_groups_and_noise()
    two = {k: vectors[k] for k in ("ep0", "ep3")}
    assert clusters(episodes, two) == []


def test_overlapping_proposals_are_cut_by_the_subject_their_members_share() -> None:
    episodes, vectors = three_groups_and_noise()
    # ep0 (of the group 0, 3, 6, 9) shares two more entities with ep1 (of 1, 4, 7, 10): proposed
    # together, the two groups are one connected group, which no subject covers; the noise ep98
    # shares two others with ep99
    one, other = ("entity:s:1", "entity:s:2"), ("entity:s:3", "entity:s:4")
    linked = {"ep0": one, "ep1": one[::-1], "ep98": other, "ep99": other}
    episodes = [
        Episode(e.episode_id, e.ended_at, e.entities + linked.get(e.episode_id, ()), "/p") for e in episodes
    ]
    assert clusters(episodes, vectors) == [
        ("ep0", "ep3", "ep6", "ep9"),  # topic 0: four, before ep0 and ep1's two
        ("ep1", "ep10", "ep4", "ep7"),
        ("ep11", "ep2", "ep5", "ep8"),
        ("ep98", "ep99"),
    ]


def _hdbscan_groups(episodes: list[Episode], vectors: dict[str, np.ndarray]) -> list[list[str]]:
    """The groups HDBSCAN alone makes of `episodes`: what proposing by meaning links."""
    groups: dict[str, list[str]] = {}
    for first, other in _by_meaning(sorted(e.episode_id for e in episodes), vectors):
        groups.setdefault(first, [first]).append(other)
    return list(groups.values())


# the sessions of a small project that a dream cycle once lumped as "5 sessions about one subject"
FIVE = {
    "ep1": "test_add is failing",
    "ep2": "add a subtract function",
    "ep3": "Migrate the users table to add an email column",
    "ep4": "Write the users table migration for the new index",
    "ep5": "The users table migration fails on existing rows",
}


ELSEWHERE = {"ep6": "bump the version to 0.3", "ep7": "README typo", "ep8": "rename the --verbose flag"}


def five_sessions() -> tuple[list[Episode], dict[str, np.ndarray]]:
    """The five sessions, without entities, their embeddings all near one another, and three
    others of the week near one another elsewhere (so HDBSCAN, which never makes one cluster of
    everything, puts the five in one cluster, as it did)."""
    rng = np.random.default_rng(5)
    episodes, vectors = [], {}
    for n, (episode_id, title) in enumerate({**FIVE, **ELSEWHERE}.items()):
        episodes.append(Episode(episode_id, NOW - timedelta(hours=10 - n), (), "/calc", title))
        v = np.eye(16)[0 if episode_id in FIVE else 1] + rng.normal(0, 0.05, 16)
        vectors[episode_id] = v / np.linalg.norm(v)
    return episodes, vectors


def test_only_the_sessions_that_share_a_subject_are_consolidated_and_the_title_names_it() -> None:
    episodes, vectors = five_sessions()
    assert words_of(FIVE["ep1"]) == {"test"}  # "add" is a common action, "failing" what happened
    assert words_of(FIVE["ep5"]) == {"user", "tabl", "migrat", "exist", "row"}
    near = {tuple(sorted(FIVE)), tuple(sorted(ELSEWHERE))}
    assert {tuple(sorted(c)) for c in _hdbscan_groups(episodes, vectors)} == near  # as the model puts them
    found = dream(episodes, [], [], vectors, NOW)
    assert found.clusters == [("ep3", "ep4", "ep5")] and found.consolidated == ["ep3", "ep4", "ep5"]
    assert found.subjects == ["the users table migration"]
    # the same without embeddings: their titles alone propose them
    assert dream(episodes, [], [], None, NOW).clusters == [("ep3", "ep4", "ep5")]
    # two sessions that share one word ("add" is none) share no subject
    assert clusters(episodes[:2], vectors) == []


def test_a_cluster_shared_by_entities_is_named_by_them() -> None:
    episodes, facts = hora_example()
    found = dream(episodes, facts, NAMES, None, NOW)
    assert found.subjects == ["react-force-graph, the user"]  # the entities all three name
    said = ["Graph view zoom", "the graph view's layout", "a graph view with custom forces", "README", "git"]
    titled = [
        Episode(e.episode_id, e.ended_at, e.entities, "/p", t) for e, t in zip(episodes, said, strict=True)
    ]
    found = dream(titled, facts, NAMES, None, NOW)
    assert (found.clusters, found.subjects) == (
        [("ep1", "ep2", "ep3")],
        ["graph view, react-force-graph, the user"],
    )


def test_a_fact_recurring_across_a_cluster_gains_0_05_an_occurrence_beyond_two() -> None:
    episodes = [episode(n, USER, RFG) for n in range(1, 5)] + [episode(5, "entity:tool:git")]
    cluster = ("ep1", "ep2", "ep3", "ep4")
    facts = [
        fact("thrice", USER, "uses", RFG, "uses it", "ep1", "ep2", "ep3"),
        fact("four", USER, "prefers", RFG, "prefers it", "ep1", "ep2", "ep3", "ep4", confidence=0.5),
        fact("capped", USER, "built_with", RFG, "built with it", *cluster, confidence=0.95),
        fact("twice", USER, "integrates", RFG, "integrates it", "ep1", "ep2"),
        fact("elsewhere", USER, "works_on", RFG, "works on it", "ep1", "ep2", "ep5", "ep9"),
        fact("episodic", USER, "created", RFG, "made it on Monday", *cluster, memory_type="episodic"),
        fact("certain", USER, "maintains", RFG, "maintains it", *cluster, confidence=1.0),
    ]
    found = dream(episodes, facts, NAMES, None, NOW)
    assert found.clusters == [cluster]
    assert [(r.fact_id, r.confidence, r.occurrences) for r in found.reconsolidated] == [
        ("capped", 1.0, 4),  # 0.95 + 0.10, at most 1.0
        ("four", 0.6, 4),  # 0.5 + 0.10
        ("thrice", 0.65, 3),  # 0.6 + 0.05
    ]
    assert {r.cluster for r in found.reconsolidated} == {cluster}


def test_a_fact_recurring_in_two_clusters_is_reconsolidated_once_by_the_one_it_recurs_most_in() -> None:
    episodes = [episode(n, USER, RFG) for n in range(1, 5)] + [episode(n, D3, FORCES) for n in range(5, 8)]
    both = fact("both", USER, "uses", D3, "uses D3", "ep1", "ep2", "ep3", "ep4", "ep5", "ep6", "ep7")
    found = dream(episodes, [both], NAMES, None, NOW)
    assert found.clusters == [("ep1", "ep2", "ep3", "ep4"), ("ep5", "ep6", "ep7")]
    [again] = found.reconsolidated
    assert (again.confidence, again.occurrences, again.cluster) == (0.7, 4, ("ep1", "ep2", "ep3", "ep4"))


def test_at_most_three_facts_are_distilled_from_a_cluster_the_most_frequent_first() -> None:
    concepts = [f"entity:concept:c{i}" for i in range(6)]
    # the hub is in all 7 episodes; c0 and c1 are with it in 6, c2 in 5, c3 and c4 in 4, c5 in 2
    episodes = [
        episode(0, RFG, *concepts),
        episode(1, RFG, *concepts[:5]),
        episode(2, RFG, *concepts[:5]),
        episode(3, RFG, *concepts[:5]),
        episode(4, RFG, "entity:concept:c0", "entity:concept:c1", "entity:concept:c2"),
        episode(5, RFG, "entity:concept:c0", "entity:concept:c1"),
        episode(6, RFG, "entity:concept:c5"),
    ]
    found = dream(episodes, [], NAMES, None, NOW)
    assert found.clusters == [tuple(f"ep{n}" for n in range(7))]
    assert [(d.source, d.target, d.confidence) for d in found.distilled] == [
        (RFG, "entity:concept:c0", 0.9),  # n = 6: 1.0, capped at 0.9
        (RFG, "entity:concept:c1", 0.9),
        (RFG, "entity:concept:c2", 0.9),  # n = 5: 0.6 + 0.3
    ]
    # a link already known takes none of the 3 places: c3 (n = 4, 0.8) comes in
    known = [fact("k", "entity:concept:c1", "related_to", RFG, "c1 goes with it")]
    found = dream(episodes, known, NAMES, None, NOW)
    assert [(d.target[-2:], d.confidence) for d in found.distilled] == [("c0", 0.9), ("c2", 0.9), ("c3", 0.8)]


def test_clusters_of_two_episodes_are_consolidated_but_distil_nothing() -> None:
    episodes = [episode(1, RFG, D3), episode(2, RFG, D3), episode(3, RFG, USER), episode(4, RFG, USER)]
    episodes += [episode(5, D3, USER)]  # shares one entity with each of the others: alone
    facts = [fact("f", RFG, "uses", D3, "uses d3", "ep1", "ep2")]
    found = dream(episodes, facts, NAMES, None, NOW)
    assert found.clusters == [("ep1", "ep2"), ("ep3", "ep4")]
    assert found.consolidated == ["ep1", "ep2", "ep3", "ep4"]
    assert found.distilled == [] and found.reconsolidated == []  # no pattern in 2 episodes


def test_the_order_of_the_inputs_changes_nothing() -> None:
    episodes, facts = hora_example()
    noise, vectors = three_groups_and_noise("m")
    episodes += noise
    facts += [fact("r", USER, "prefers", D3, "prefers D3", "ep1", "ep2", "ep3")]
    found = dream(episodes, facts, NAMES, vectors, NOW)
    assert found.distilled and found.reconsolidated and len(found.clusters) == 4
    for seed in range(5):
        rng = random.Random(seed)
        names, embedded = NAMES[:], list(vectors.items())
        for items in (episodes, facts, names, embedded):
            rng.shuffle(items)
        assert dream(episodes, facts, names, dict(embedded), NOW) == found


def test_exact_duplicates_point_to_the_smallest_id() -> None:
    facts = [
        fact("f2", "a", "uses", "b", "Uses  PyTest"),
        fact("f1", "a", "uses", "b", " uses pytest\n"),
        fact("f4", "a", "uses", "b", "USES PYTEST"),
        fact("f3", "a", "uses", "c", "uses pytest"),  # another target
        fact("f5", "a", "prefers", "b", "uses pytest"),  # another relation
        fact("f6", "a", "uses", "b", "uses pytest."),  # other words
        fact("f7", "a", "uses", None, "uses pytest"),
        fact("f8", "a", "uses", None, "Uses pytest"),
    ]
    assert duplicates(facts) == [("f2", "f1"), ("f4", "f1"), ("f8", "f7")]
    assert duplicates(facts[::-1]) == duplicates(facts)
    assert duplicates(facts[2:]) == [("f8", "f7")]


def test_similar_procedures_point_to_the_one_that_succeeds_most() -> None:
    angle = np.arccos(0.9)  # each step 0.9 from the last: p1 and p3 are 0.62 apart, linked by p2
    vectors = {
        "p1": np.array([1.0, 0.0, 0.0]),
        "p2": 3 * np.array([np.cos(angle), np.sin(angle), 0.0]),  # not of unit length
        "p3": np.array([np.cos(2 * angle), np.sin(2 * angle), 0.0]),
        "p4": np.array([0.0, 0.0, 1.0]),
        "p5": np.array([0.0, 0.1, 1.0]),
        "p6": np.array([0.0, 1.0, 0.0]),  # cosine 0.44 with p2's, 0.78 with p3's, 0.1 with p5's
    }
    procedures = [
        Procedure("p1", "run pytest -x then fix", 2, 2),
        Procedure("p2", "run pytest -x and fix", 3, 1),
        Procedure("p3", "pytest -x, fix, again", 3, 0),  # the best rate of its group
        Procedure("p4", "deploy with fly", 2, 0),
        Procedure("p5", "fly deploy", 4, 0),  # as p4 never failed, but with more evidence
        Procedure("p6", "write the changelog", 9, 0),
        Procedure("p7", "no embedding", 9, 0),
    ]
    assert skills(procedures, vectors) == [("p1", "p3"), ("p2", "p3"), ("p4", "p5")]
    assert skills(procedures[::-1], vectors) == skills(procedures, vectors)
    tied = [Procedure("p4", "deploy", 1, 1), Procedure("p5", "deploy!", 1, 1)]
    assert skills(tied, vectors) == [("p5", "p4")]  # all else equal: the smallest id
    untried = [Procedure("p4", "deploy", 0, 0), Procedure("p5", "deploy!", 9, 1)]
    assert skills(untried, vectors) == [("p4", "p5")]  # untried is no perfect score
    assert skills(procedures, {}) == []
