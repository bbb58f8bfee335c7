"""Reflection without a model: an opinion formed from what recall found, weighed by evidence.

Only a memory that speaks to the question is evidence (`speaks_to`): one that names what the
question asks about (`subject`: its content words beyond stop words and the words of asking,
"numpy" in "should we use numpy in calc?", not "calc", which only says where), or that the model
puts at NEAR (0.7) or more of it. Recall gives what resembles a question, and an unrelated memory
of the same project ("calc.py has an add function") is no support: with nothing that speaks to
it, memory does not know. Each memory that speaks either supports the question's claim or
contradicts it (`stance`): by what it says of the subject ("we chose PostgreSQL over MySQL"
contradicts "should we use MySQL?"; "Anti-pattern (it failed): don't use numpy in calc"
contradicts "should we use numpy in calc?"), else when it says something failed, is to be
avoided or no longer holds ("not", "never", "failed", "avoid", "instead of", "anti-pattern",
"ne ... pas", "jamais", "échoué"...). The question asked before, and its earlier copies, are no
evidence.
A memory's weight is how well it matches (relative to the best match), how strongly it comes to
mind (its activation, as a 0..1 strength), how recent and how confident it is, shaped by the
project's disposition (schemas/disposition.py):

- literalism keeps only memories matching at least (literalism - 1) / 8 as well as the best
  that speaks to the question (1: every one; 5: half as well as the best);
- empathy multiplies the user's own words (prompts, what they asked to remember, preferences)
  by 1 + 0.25 (empathy - 3);
- skepticism is prior evidence on both sides, 0.5 per point: the confidence of the side with
  more weight W against the other's V is (W + k/2) / (W + V + k), 0.5 when memory is silent.

An opinion above 0.9 is flagged for promotion into CLAUDE.md's memory section. Pure; when
extraction's LLM is configured, `with_llm` has the model word and weigh the same evidence
(within the same daily budget), and the evidence-weighted opinion stands when it cannot.
"""

import hashlib
import math
import re
from collections.abc import Iterator, Sequence

import msgspec

from projections.recall import fabric
from projections.recall.block import asked_before
from projections.recall.words import terms, word_set
from schemas import kinds, memory
from schemas.disposition import Disposition
from schemas.llm import LLMUsed
from schemas.recall import RecallRequest, Scored
from schemas.reflection import Evidence, Reflection, Stance
from workers.dynamics.crystallize import about
from workers.llm.config import LLMSettings
from workers.llm.providers import answer_as
from workers.thinking.follower import Derived

PROMOTE_ABOVE = 0.9
EVIDENCE = 20  # the memories an opinion weighs at most, near-duplicates merged
MOVED = 0.05  # a confidence that moves less than this leaves the opinion as it was
# The model's cosine (all-MiniLM-L6-v2) from which a memory that names nothing the question asks
# about still speaks to it: the question said another way. Unrelated texts sit at 0.0-0.25 and a
# project's memories on another matter of the same code up to ~0.5 ("calc.py has an add function"
# is at 0.46 of "should we use numpy in calc?", as near as "numpy is a heavy dependency" at
# 0.58): nearness alone cannot tell them apart, so only a paraphrase's (0.8 and more: "should we
# use numpy?" is at 0.86) counts without a shared word.
NEAR = 0.7
_USERS_OWN = {"prompt", "remembered", "preference"}
_AGAINST = re.compile(
    r"\b(?:not|never|no longer|don't|doesn't|didn't|won't|can't|cannot|fail(?:s|ed|ing|ure)?|broke|broken|"
    r"avoid|instead of|anti-pattern|wrong|slow|bug(?:gy)?|error|reverted?|stop(?:ped)?|"
    r"ne\s+\S+\s+pas|n'\S+\s+pas|jamais|plus jamais|échou\w*|éviter|au lieu de|cassé)\b",
    re.IGNORECASE,
)


# what says a thing went wrong, whatever it is about (negations and choices are read by meaning): a
# remembered anti-pattern's text says "Anti-pattern (it failed): ..."
_FAILED = re.compile(
    r"\b(?:fail(?:s|ed|ing|ure)?|broke|broken|wrong|slow|bug(?:gy)?|error|reverted?|anti-pattern|échou\w*|cassé)\b",
    re.IGNORECASE,
)


def recorded(formed: Reflection, project: str, causes: tuple[str, ...]) -> Iterator[Derived]:
    """The events that record `formed`: `opinion.formed` the first time, `opinion.revised` when
    the evidence moved it (by MOVED or more), and an `observation.formed` above PROMOTE_ABOVE."""
    before = formed.revised_from
    if before is None:
        opinion = memory.OpinionFormed(
            opinion_id=formed.opinion_id, statement=formed.statement, confidence=formed.confidence
        )
        yield Derived(kinds.OPINION_FORMED, opinion, project, causes)
    elif abs(formed.confidence - before) >= MOVED:
        reason = f"new evidence: {len(formed.supporting)} for, {len(formed.contradicting)} against"
        revised = memory.OpinionRevised(
            opinion_id=formed.opinion_id,
            statement=formed.statement,
            confidence=formed.confidence,
            reason=reason,
        )
        yield Derived(kinds.OPINION_REVISED, revised, project, causes)
    if formed.promote:
        observed = memory.ObservationFormed(
            observation_id=formed.opinion_id.replace("opinion:", "observation:"),
            statement=formed.statement,
            confidence=formed.confidence,
        )
        yield Derived(kinds.OBSERVATION_FORMED, observed, project, causes)


def evidence_request(query: str, project: str) -> RecallRequest:
    """What reflection asks recall: twice the evidence it weighs, questions asked before left out."""
    return RecallRequest(prompt=query, project=project, limit=2 * EVIDENCE, answers_only=True)


def evidence(results: Sequence[Scored]) -> list[Scored]:
    """What recall found that may weigh, near-duplicates merged: not reverie's own opinions. An
    opinion is a conclusion drawn from evidence, not evidence; and, recalled first, it would
    stand for the memory it quotes, which then no longer counts (the opinion names the question,
    so it is left out as a copy of it)."""
    found = [r for r in results if r.kind != "opinion"]
    merged = fabric.deduplicated(found, lambda r: r.text)
    return [msgspec.structs.replace(r, cross_validated=twice) for r, twice in merged][:EVIDENCE]


def opinion_id(project: str, query: str) -> str:
    said = " ".join(query.lower().split())
    return "opinion:" + hashlib.blake2b(f"{project}\0{said}".encode(), digest_size=10).hexdigest()


Subject = dict[str, bool | None]  # a content word the question names: wanted, not, or both (no claim)

# what only frames a question: a verb of choosing that takes its object after a preposition
# ("rely on", "switch to", "settle on"), and the words of asking an opinion ("a good idea",
# "worth it", "what do you think"); crystallize.about drops the words that make a rule ("use",
# "always", "prefer") and the common actions ("run", "add", "make")
_ASKING = frozenset(
    terms(
        "rely depend depends switch stick stay settle standardize standardise bet focus go going build "
        "think idea good better best worth ok okay fine recommend consider try opinion know bon mieux"
    )
)
# what introduces where, or what for, a question asks: its context, not its subject ("numpy in
# calc", "MySQL for the new service", "DuckDB for analytics")
_CONTEXT = re.compile(r"\b(?:in|inside|within|for|on|at|across|throughout|dans|pour|sur)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[,;:.!?()]+")


def subject(question: str) -> Subject:
    """What `question` asks about: the content words it names (as crystallize.about reads them,
    the words of asking left out), each wanted or not, outside the phrases that say where or what
    for ("in calc", "for the new service"); when nothing is named outside them, the first such
    phrase that names something ("should we rely on numpy in calc?": numpy). A word said both
    ways makes no claim (None)."""
    main: set[tuple[str, bool]] = set()
    framed: list[set[tuple[str, bool]]] = []
    for clause in _CLAUSE.split(question):
        head, *phrases = _CONTEXT.split(clause)
        main |= _named(head)
        framed += [named for phrase in phrases if (named := _named(phrase))]
    said = main or (framed[0] if framed else set())
    return {word: None if (word, not wanted) in said else wanted for word, wanted in sorted(said)}


def _named(text: str) -> set[tuple[str, bool]]:
    return {(word, wanted) for word, wanted in about(text) if word not in _ASKING}


def speaks_to(text: str, similarity: float, asked: Subject) -> bool:
    """Whether a memory speaks to a question about `asked`: it names some of it, or the model puts
    it at NEAR or more of the question (`similarity`, its cosine)."""
    return similarity >= NEAR or any(word in asked for word, _ in about(text))


def stance(text: str, question: str = "") -> Stance:
    """Whether a memory supports the question's claim or contradicts it. By meaning first: a
    memory that names what the question is about (`subject`) wants it as the question does, or
    not ("we chose PostgreSQL over MySQL" contradicts "should we use MySQL?", and supports "should
    we drop MySQL?"; crystallize.about reads "over", "instead of", "no longer", "dropped",
    "don't"...), and contradicts when it says that went wrong ("DuckDB failed under concurrent
    writers", "Anti-pattern (it failed): numpy in calc.py"). A memory that names none of it
    speaks lexically: it contradicts when it says something failed, is to be avoided or no longer
    holds."""
    asked = subject(question)
    named = [wanted == asked[word] for word, wanted in sorted(about(text)) if asked.get(word) is not None]
    if named:
        agrees = sum(named) * 2 >= len(named) and not _FAILED.search(text)
        return "supports" if agrees else "contradicts"
    return "contradicts" if _AGAINST.search(text) else "supports"


def weigh(results: Sequence[Scored], disposition: Disposition, question: str = "") -> list[Evidence]:
    """The evidence among `results`, each with its weight (see the module's docstring): only what
    speaks to the question (`speaks_to`); the question asked before, and its earlier copies, are
    no evidence (block.asked_before)."""
    asked, about_it = word_set(question), subject(question)
    results = [
        r
        for r in results
        if not asked_before(r.kind, r.text, asked) and speaks_to(r.text, r.similarity, about_it)
    ]
    best = max((r.relevance for r in results), default=0.0)
    floor = best * (disposition.literalism - 1) / 8
    found = []
    for r in results:
        if r.relevance < floor:
            continue
        # relevance runs from recall's worst candidate (0) to its best: evidence all at 0 had only
        # opinions, questions or what does not speak to it above it, and matches as well as the best
        match = r.relevance / best if best > 0 else 1.0
        strength = 1.0 / (1.0 + math.exp(-r.activation)) if math.isfinite(r.activation) else 0.0
        weight = match * (0.5 + 0.5 * strength) * (0.5 + 0.5 * r.recency) * r.confidence
        if r.kind in _USERS_OWN:
            weight *= 1 + 0.25 * (disposition.empathy - 3)
        found.append(Evidence(r.memory_id, r.kind, r.text, stance(r.text, question), round(weight, 6), r.ts))
    return found


def reflect(
    query: str, project: str, results: Sequence[Scored], disposition: Disposition, before: float | None = None
) -> Reflection:
    """The opinion the evidence in `results` makes on `query` (`before`: the confidence the
    project's opinion on it had, if it had one)."""
    evidence = weigh(results, disposition, query)
    supporting = sorted((e for e in evidence if e.stance == "supports"), key=lambda e: -e.weight)
    contradicting = sorted((e for e in evidence if e.stance == "contradicts"), key=lambda e: -e.weight)
    pro, con = sum(e.weight for e in supporting), sum(e.weight for e in contradicting)
    prior = 0.5 * disposition.skepticism
    confidence = round((max(pro, con) + prior / 2) / (pro + con + prior), 6)
    if pro > con:
        statement = f"On {query!r}, memory supports it: {_said(supporting[0].text)}"
    elif con > pro:
        statement = f"On {query!r}, memory argues against it: {_said(contradicting[0].text)}"
    elif supporting and contradicting:
        said = f"for, {_said(supporting[0].text, 150)}; against, {_said(contradicting[0].text, 150)}"
        statement = f"On {query!r}, memory is divided: {said}"
    else:  # nothing it holds speaks to the question (or what does weighs nothing)
        statement = f"On {query!r}, memory does not know: nothing it holds speaks to it."
    return Reflection(
        query=query,
        opinion_id=opinion_id(project, query),
        statement=statement,
        confidence=confidence,
        supporting=supporting,
        contradicting=contradicting,
        revised_from=before,
        promote=confidence > PROMOTE_ABOVE,
    )


def _said(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Judged(msgspec.Struct, frozen=True):
    statement: str
    confidence: float


_SYSTEM = (
    "You form an opinion for a coding agent from its memories. Weigh the memories given, each marked "
    "as supporting or contradicting, with its weight. Answer in JSON: a one-sentence statement of "
    "what memory says on the question, and your confidence (0 to 1) that it holds. Stay within the "
    "evidence: no evidence means confidence 0.5."
)


def with_llm(
    settings: LLMSettings, reflection: Reflection, disposition: Disposition, spent_today: int
) -> tuple[Reflection | None, LLMUsed]:
    """`reflection` as the configured model words and weighs it, or None (over budget, or it
    failed): the caller keeps the evidence-weighted one. What it cost, either way."""
    evidence = "\n".join(
        f"- [{e.stance}, weight {e.weight:.2f}] {_said(e.text)}"
        for e in [*reflection.supporting, *reflection.contradicting]
    )
    prompt = (
        f"Project background: {disposition.background or 'none given'}\n"
        f"Disposition (1 to 5): skepticism {disposition.skepticism}, literalism {disposition.literalism}, "
        f"empathy {disposition.empathy}\n\nQuestion: {reflection.query}\n\nMemories:\n{evidence or '(none)'}"
    )
    judged, used = answer_as(settings, _SYSTEM, prompt, _Judged, spent_today)
    if judged is None:
        return None, used
    confidence = round(min(max(judged.confidence, 0.0), 1.0), 6)
    formed = msgspec.structs.replace(
        reflection,
        statement=judged.statement.strip() or reflection.statement,
        confidence=confidence,
        formed_by="llm",
        promote=confidence > PROMOTE_ABOVE,
    )
    return formed, used
