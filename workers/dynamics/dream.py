"""The dream cycle, after HORA's hippocampal replay: what recent episodes have in common becomes
semantic memory. What it decides, consolidation.py turns into derived events, which the
follower `dreams` (workers/dynamics/follow.py) hands the runner to emit.

- **Replay.** The episodes given (the job gives the unconsolidated ones) that ended in the
  WINDOW_DAYS (7) before `now`, and only when there are at least MIN_EPISODES (5) of them.
- **Clusters.** Episodes go together only when they are shown to share a subject. Two are
  proposed together when they share 2 or more entities, or SUBJECT_WORDS (2) or more of their
  titles' content words (`words_of`), or when scikit-learn's HDBSCAN puts their embeddings in one
  cluster (cosine, min_cluster_size 3, min_samples 1; its noise proposes nothing; not run on
  fewer than 3 embeddings); the proposals connect into groups. Nearness proposes, a subject
  disposes: each group is then cut into clusters whose members all share a named subject (an
  entity they all name, or SUBJECT_WORDS or more content words all their titles name), the
  largest first (ties: the subject naming the most, then the smallest ids), until no two of the
  rest share one. So sessions the model puts near ("test_add is failing", "add a subtract
  function" and three about the users table migration) make one cluster of the three, about
  "the users table migration", and leave the other two alone. A lone episode is no cluster.
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
- **Consolidation.** The clustered episodes are consolidated, each cluster into one episode
  named by its subject (`Dream.subjects`: "3 sessions about the users table migration"); the
  members stay as they were, linked to it. An episode in no cluster waits for a later cycle
  (HORA marks every replayed episode).

`duplicates` (light consolidation: facts said word for word again) and `skills` (skill
consolidation: similar procedures, the most successful kept) say which fact stands for which.

Pure and deterministic: the same inputs, in any order, give the same outputs (everything is
sorted by id before it is counted, clustered or chosen). Costs: proposing by shared entities
and words counts, for each entity and word, the pairs of episodes it is in (quadratic in the
episodes an entity or a word is in); HDBSCAN on cosine works on all pairs of the embedded
episodes; cutting a group by subject looks, for each cluster it cuts, at every entity and every
pair of title words of the group's remaining episodes; `skills` compares every pair of
procedures.
"""

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from itertools import combinations

import msgspec
import networkx as nx
import numpy as np

from workers.dynamics.crystallize import about

MIN_EPISODES = 5
WINDOW_DAYS = 7
WINDOW = timedelta(days=WINDOW_DAYS)
SHARED_ENTITIES = 2  # entities two episodes share to be proposed together
SUBJECT_WORDS = 2  # content words a cluster's titles must all name, when no entity is common to them
PHRASE_WORDS = 8  # the longest stretch of a title that says a subject
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
    title: str = ""  # its goal, what it was about (workers/extraction/episodes.py)


class Subject(msgspec.Struct, frozen=True):
    """What every member of a cluster names: entities, and content words of their titles."""

    entities: tuple[str, ...]
    words: tuple[str, ...]  # as `words_of` reads them (stemmed)
    phrase: str  # the words as a member's title says them ("the users table migration"), or ""


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
    subjects: list[str] = []  # what each cluster is about, as its title says it (in `clusters`' order)


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
    grouped = subject_clusters(recent, embeddings)
    found = [cluster for cluster, _ in grouped]
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
    subjects = [said(subject, names) for _, subject in grouped]
    return Dream(found, _reconsolidated(found, stated), distilled, consolidated, subjects)


def clusters(
    episodes: Sequence[Episode], embeddings: Mapping[str, np.ndarray] | None
) -> list[tuple[str, ...]]:
    """The clusters of `episodes` (see the module's docstring): each sorted, and sorted."""
    return [cluster for cluster, _ in subject_clusters(episodes, embeddings)]


def subject_clusters(
    episodes: Sequence[Episode], embeddings: Mapping[str, np.ndarray] | None
) -> list[tuple[tuple[str, ...], Subject]]:
    """The clusters of `episodes`, each with the subject all its members share: proposed by
    shared entities, shared title words and HDBSCAN, cut by subject (see the module's
    docstring). Each sorted, and sorted."""
    by_id = {e.episode_id: e for e in sorted(episodes, key=lambda e: (e.episode_id, e.entities, e.title))}
    ids = sorted(by_id)
    words = {i: words_of(by_id[i].title) for i in ids}
    entities = {i: frozenset(by_id[i].entities) for i in ids}
    links = [
        *_sharing({i: entities[i] for i in ids}, SHARED_ENTITIES),
        *_sharing(words, SUBJECT_WORDS),
        *_by_meaning(ids, embeddings or {}),
    ]
    found = [
        (cluster, _subject(cluster, by_id, entities, words))
        for group in _components(ids, links)
        if len(group) >= 2
        for cluster in _by_subject(group, entities, words)
    ]
    return sorted(found, key=lambda found: found[0])


# the words that say what happened in a session, or how it went, not what it was about
_HAPPENED = frozenset(
    about(
        "fix fixes fixed fixing fail fails failed failing failure error errors bug bugs issue issues "
        "problem problems broken work works working help need needs want wants change changes changed "
        "update updates updated implement implementing look try tries let please thing things code "
        "session sessions new again still today way ok okay"
    )
)


def words_of(title: str) -> frozenset[str]:
    """The content words of an episode's title that can name its subject: as crystallize.about
    reads them (stop words, the words that make a rule and the common actions left out: "add",
    "run", "make"), without the words that only say what happened ("fix", "failing", "error")."""
    return frozenset(word for word, _ in about(title)) - {word for word, _ in _HAPPENED}


def _sharing(having: Mapping[str, frozenset[str]], least: int) -> list[tuple[str, str]]:
    """The pairs of ids whose sets (entities, or title words) share `least` or more members."""
    holders: dict[str, list[str]] = {}
    for holder in sorted(having):
        for member in having[holder]:
            holders.setdefault(member, []).append(holder)
    shared = Counter(pair for ids in holders.values() for pair in combinations(ids, 2))
    return sorted(pair for pair, n in shared.items() if n >= least)


def _by_subject(
    group: tuple[str, ...], entities: Mapping[str, frozenset[str]], words: Mapping[str, frozenset[str]]
) -> list[tuple[str, ...]]:
    """`group` (proposed together) cut into clusters whose members all share a subject: an entity,
    or SUBJECT_WORDS or more title words; the largest first (ties: the one whose members share
    the most, then the smallest ids), until no two of the rest share one."""
    # each subject a member names (an entity, a pair of title words), with the members naming it
    naming: dict[tuple[str, ...], set[str]] = {}
    for i in group:
        for entity in entities[i]:
            naming.setdefault(("entity", entity), set()).add(i)
        for pair in combinations(sorted(words[i]), SUBJECT_WORDS):
            naming.setdefault(("words", *pair), set()).add(i)
    shares = {frozenset(members) for members in naming.values() if len(members) >= 2}

    def rank(members: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        shared = frozenset.intersection(*(entities[i] for i in members))
        common = frozenset.intersection(*(words[i] for i in members))
        return (-(len(shared) + len(common)), members)

    found: list[tuple[str, ...]] = []
    while shares:
        most = max(len(members) for members in shares)
        best = min((tuple(sorted(m)) for m in shares if len(m) == most), key=rank)
        found.append(best)
        # what the rest of the group still shares
        shares = {rest for members in shares if len(rest := members.difference(best)) >= 2}
    return found


def _subject(
    cluster: tuple[str, ...],
    by_id: Mapping[str, Episode],
    entities: Mapping[str, frozenset[str]],
    words: Mapping[str, frozenset[str]],
) -> Subject:
    """What all of `cluster` names, and how one of its titles says its words."""
    shared = frozenset.intersection(*(entities[i] for i in cluster))
    common = frozenset.intersection(*(words[i] for i in cluster))
    if len(common) < SUBJECT_WORDS:
        common = frozenset()  # one word in common names no subject (an entity does)
    return Subject(
        tuple(sorted(shared)), tuple(sorted(common)), _phrase(common, [by_id[i].title for i in cluster])
    )


_TOKEN = re.compile(r"[^\W_]+")


def _phrase(common: frozenset[str], titles: Sequence[str]) -> str:
    """The shortest stretch of one of `titles` that names all of `common` (ties: the first title
    given), as it says it, "the" before it kept ("the users table migration"); at most
    PHRASE_WORDS words, else `common`'s words as the first title says them, in its order."""
    if not common:
        return ""
    best: tuple[int, int, str] | None = None
    for n, title in enumerate(titles):
        tokens = list(_TOKEN.finditer(title))
        said = [frozenset(word for word, _ in about(t.group())) & common for t in tokens]
        for start in range(len(tokens)):
            if not said[start]:
                continue
            seen: set[str] = set()
            for end in range(start, len(tokens)):
                seen |= said[end]
                if seen == common:
                    length = end - start + 1
                    if best is None or (length, n) < best[:2]:
                        first = (
                            start - 1 if start > 0 and tokens[start - 1].group().lower() == "the" else start
                        )
                        best = (length, n, title[tokens[first].start() : tokens[end].end()])
                    break
    if best is not None and best[0] <= PHRASE_WORDS:
        phrase = best[2]
    else:
        tokens = list(_TOKEN.finditer(titles[0]))
        named = [t.group() for t in tokens if frozenset(word for word, _ in about(t.group())) & common]
        phrase = " ".join(dict.fromkeys(named)) or " ".join(sorted(common))
    return phrase[0].lower() + phrase[1:] if phrase[:1].isupper() and not phrase[1:2].isupper() else phrase


def said(subject: Subject, names: Mapping[str, str]) -> str:
    """A cluster's subject as its title says it: its words' phrase, then the entities all its
    members name (by name), three at most."""
    named = sorted(names.get(entity, entity) for entity in subject.entities)
    return ", ".join([*([subject.phrase] if subject.phrase else []), *named][:3])


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
