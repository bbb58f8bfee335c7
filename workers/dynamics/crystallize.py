"""What recurs crystallizes: a preference the user states in 3 or more distinct sessions becomes
a `preference.crystallized`, and a failure met 3 or more times a `failure.recurring`.

Signals are grouped by their normalized text, and then by what they are about: two wordings
join when their embeddings' cosine reaches `SAME_MEANING`, or when they name the same things
wanted the same way (`about`: the tools, libraries, commands and other content words they name,
each wanted or not, French read in English, their Jaccard index at least `SAME_SUBJECT`) and the
model still finds them near (`RELATED`). So "Toujours utiliser des exports nommés", "On utilise
des named exports, pas de default" and "Je préfère les named exports" (cosines 0.64 to 0.73 under
MiniLM) are one preference, and "always run pytest with -x" and "never run pytest in parallel"
(one tool, two rules) two. Single linkage: wordings join through a third.

A group counts the distinct sessions that said it, so three wordings of one preference in one
session are one session, not three. The newest `WINDOW` signals of a project are read, and its
profile holds at most `PROFILE` of them, the strongest: the most sessions, then the most
signals, then the newest.

A preference's strength is the share of the evidence a Laplace estimate gives it,
sessions / (sessions + 2): 0.6 at 3 sessions, towards 1 as it keeps recurring.

Pure, and deterministic whatever the order it is given things in: a job run twice, or on two
machines, crystallizes the same preferences with the same ids.
"""

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

import msgspec
import numpy as np

from projections.recall.words import NEGATIONS, jaccard, terms, tokens

MIN_SESSIONS = 3
MIN_OCCURRENCES = 3
PROFILE = 30
WINDOW = 500
SAME_MEANING = 0.9  # the cosine of two wordings of one statement (MiniLM: paraphrases ~0.8-0.95)
SAME_SUBJECT = 0.5  # the Jaccard index of what two wordings are about (`about`)
RELATED = 0.5  # ... and their cosine at least (MiniLM: unrelated texts 0.0-0.25, a topic's ~0.4+)

# texts -> their unit vectors, one row per text
Encode = Callable[[Sequence[str]], np.ndarray]


class Utterance(msgspec.Struct, frozen=True):
    """One signal as the snapshot holds it: who said what, where, and which event says so."""

    event_id: str  # the signal.detected event
    session_id: str
    text: str  # normalized
    ts: datetime
    kind: str = "preference"


class Crystal(msgspec.Struct, frozen=True):
    """A preference that recurred in enough sessions to hold."""

    preference_id: str
    statement: str  # the wording said most often (ties: the earliest)
    sessions: int
    evidence: int  # how many signals support it
    strength: float
    caused_by: tuple[str, ...]  # the signal events behind it


class Occurrence(msgspec.Struct, frozen=True):
    """One failure: its signature, the event that met it, when, and what it said."""

    event_id: str
    signature: str
    ts: datetime
    example: str


class Recurring(msgspec.Struct, frozen=True):
    signature: str
    occurrences: int
    example: str  # the newest occurrence's words
    last_seen: datetime
    caused_by: tuple[str, ...]


def preference_id(project: str, statement: str) -> str:
    digest = hashlib.blake2b(f"{project}\0{statement}".encode(), digest_size=10).hexdigest()
    return f"preference:{digest}"


def crystallize(project: str, said: Iterable[Utterance], encode: Encode | None = None) -> list[Crystal]:
    """The preferences of `project` that `said` (its signals) crystallize, strongest first, at
    most PROFILE; `encode` groups wordings by meaning (None: by their text alone)."""
    newest = sorted(said, key=lambda s: (s.ts, s.event_id), reverse=True)[:WINDOW]
    by_text: dict[str, list[Utterance]] = {}
    for signal in newest:
        by_text.setdefault(signal.text, []).append(signal)
    crystals = []
    for texts in _by_meaning(sorted(by_text), encode):
        group = [s for text in texts for s in by_text[text]]
        sessions = len({s.session_id for s in group})
        if sessions >= MIN_SESSIONS:
            crystals.append(_crystal(project, texts, group, sessions, by_text))
    crystals.sort(key=lambda c: (-c.sessions, -c.evidence, c.preference_id))
    return crystals[:PROFILE]


def _crystal(
    project: str,
    texts: list[str],
    group: list[Utterance],
    sessions: int,
    by_text: Mapping[str, list[Utterance]],
) -> Crystal:
    def said_most(text: str) -> tuple[int, datetime, str]:
        return (-len(by_text[text]), min(s.ts for s in by_text[text]), text)

    def said_first(text: str) -> tuple[datetime, str]:
        return min((s.ts, s.event_id) for s in by_text[text])

    statement = min(texts, key=said_most)
    return Crystal(
        # named by the wording said first: a wording that joins later changes nothing
        preference_id=preference_id(project, min(texts, key=said_first)),
        statement=statement,
        sessions=sessions,
        evidence=len(group),
        strength=round(sessions / (sessions + 2), 6),
        caused_by=tuple(sorted({s.event_id for s in group})),
    )


def _by_meaning(texts: list[str], encode: Encode | None) -> list[list[str]]:
    """`texts` (sorted) grouped by single linkage: the same meaning, or the same things wanted
    the same way and near (see the module's docstring); each group sorted. Without a model, by
    what they are about alone."""
    if len(texts) < 2:
        return [[t] for t in texts]
    subjects = [about(t) for t in texts]
    alike = np.array([[jaccard(a, b) >= SAME_SUBJECT and bool(a) for b in subjects] for a in subjects])
    if encode is None:
        joined = alike
    else:
        vectors = encode(texts)
        cosines = vectors @ vectors.T
        joined = (cosines >= SAME_MEANING) | (alike & (cosines >= RELATED))
    from scipy.sparse import csr_matrix  # here: SciPy's import is 0.26 s that reflection need not pay
    from scipy.sparse.csgraph import connected_components

    _, labels = connected_components(csr_matrix(joined), directed=False)
    groups: dict[int, list[str]] = {}
    for text, label in zip(texts, labels, strict=True):
        groups.setdefault(int(label), []).append(text)
    return sorted(groups.values())


def about(text: str) -> frozenset[tuple[str, bool]]:
    """What a rule is about: the content words it names (as recall reads them, French words read
    in English first), each with whether it is wanted (not after "never", "not", "avoid",
    "jamais", "pas", "sans"..., a second negation wanting again; not what follows "instead of",
    "over", "rather than", "plutôt que", "au lieu de"), within the clause it is said in. The words
    that only make a rule ("always", "use", "prefer", "toujours", "utiliser") or name a common
    action ("run", "commit", "add") say nothing of what it is about: "always run ruff before
    committing" and "never commit without running ruff" are both about ruff, wanted."""
    found: set[tuple[str, bool]] = set()
    for clause in _CLAUSE.split(text):
        wanted, ne = True, False
        for word in tokens(clause):
            word = _IN_ENGLISH.get(word, word)
            if ne and word in _NE_ENDS:  # "ne ... pas" is one negation
                ne = False
            elif word in NEGATIONS:
                wanted, ne = not wanted, word in ("ne", "n")
            elif word in _CONTRASTING:
                wanted = False
            else:
                found.update((stem, wanted) for stem in terms(word) if stem not in _SAID_NOTHING)
    return frozenset(found)


_CLAUSE = re.compile(r"[,;:.!?()]+")
_NE_ENDS = frozenset(["pas", "jamais", "plus", "rien", "aucun", "aucune"])
_CONTRASTING = frozenset(
    ["instead", "over", "rather", "lieu", "plutôt", "dropped", "drop", "removed", "replaced", "longer"]
)
# what only makes a rule, a common action, and what is left of "n't" but its "t" ("shouldn't" is
# "shouldn" and "t")
_CONTRACTED = ("isn", "aren", "wasn", "weren", "shouldn", "couldn", "wouldn", "mustn", "haven", "hasn",
               "hadn", "needn", "don", "doesn", "didn", "won", "can", "ca")  # fmt: skip
_SAID_NOTHING = frozenset(
    terms(
        "always prefer prefers preferred use uses using please should must want rather like ever now "
        "onward run runs running commit commits committing add adding make making do doing write "
        "writing create call check keep put set get start faut"
    )
    + list(_CONTRACTED)
)
# French words of a developer's rules, read in English (what a rule is about, not its grammar)
_IN_ENGLISH = {
    "toujours": "always", "utiliser": "use", "utilise": "use", "utilisez": "use", "utilisons": "use",
    "préfère": "prefer", "préfèrent": "prefer", "préférer": "prefer", "privilégie": "prefer",
    "privilégier": "prefer", "nommé": "named", "nommés": "named", "nommée": "named", "nommées": "named",
    "fichier": "file", "fichiers": "files", "fonction": "function", "fonctions": "functions",
    "erreur": "error", "erreurs": "errors", "dépendance": "dependency", "dépendances": "dependencies",
    "bibliothèque": "library", "bibliothèques": "libraries", "paquet": "package", "paquets": "packages",
    "lancer": "run", "lance": "run", "lancez": "run", "exécuter": "run", "exécute": "run",
    "tester": "test", "teste": "test", "testez": "test", "défaut": "default", "commentaire": "comment",
    "commentaires": "comments", "classe": "class", "classes": "classes", "méthode": "method",
    "méthodes": "methods", "requête": "query", "requêtes": "queries", "base": "database",
    "avant": "before", "après": "after", "chaque": "every", "typage": "typing", "formater": "format",
    "formate": "format", "déployer": "deploy", "déploie": "deploy", "branche": "branch",
    "interdit": "never", "désormais": "now",
}  # fmt: skip


def recurring(occurrences: Iterable[Occurrence]) -> list[Recurring]:
    """The failure signatures met MIN_OCCURRENCES times or more (each event once)."""
    by_signature: dict[str, dict[str, Occurrence]] = {}
    for each in occurrences:
        by_signature.setdefault(each.signature, {})[each.event_id] = each
    found = []
    for signature, met in sorted(by_signature.items()):
        if len(met) >= MIN_OCCURRENCES:
            last = max(met.values(), key=lambda o: (o.ts, o.event_id))
            found.append(Recurring(signature, len(met), last.example, last.ts, tuple(sorted(met))))
    return found
