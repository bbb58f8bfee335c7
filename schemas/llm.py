"""What an LLM extractor must answer, as a strict JSON schema; and what each call cost.

The model gets the schema of `Extracted` (its entities, facts and the session's episode) and must
answer exactly that: unknown fields, missing ones or values out of the vocabularies fail
msgspec's validation, which the extractor reports back to the model once before it falls back
on the deterministic extractor. Relations stay free text here: the ontology normalizes them and
never refuses one (schemas/ontology.py).
"""

from typing import Annotated, Literal

import msgspec

from schemas.memory import Category, Confidence, EntityType, Outcome

Short = Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
Statement = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class LLMEntity(msgspec.Struct, forbid_unknown_fields=True):
    name: Short
    type: EntityType


class LLMFact(msgspec.Struct, forbid_unknown_fields=True):
    """`subject` `relation` `object`, said as one standalone sentence (`statement`)."""

    subject: Short
    relation: Short
    statement: Statement
    category: Category
    confidence: Confidence
    object: Short | None = None


class LLMEpisode(msgspec.Struct, forbid_unknown_fields=True):
    title: Short
    summary: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    outcome: Outcome


class Extracted(msgspec.Struct, forbid_unknown_fields=True):
    entities: Annotated[list[LLMEntity], msgspec.Meta(max_length=50)]
    facts: Annotated[list[LLMFact], msgspec.Meta(max_length=50)]
    episode: LLMEpisode


def extracted_schema() -> dict[str, object]:
    """`Extracted` as a self-contained JSON schema (definitions inlined), as providers take it."""
    schema = msgspec.json.schema(Extracted)
    definitions = schema.pop("$defs", {})

    def inline(node: object) -> object:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(definitions[node["$ref"].rsplit("/", 1)[-1]])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(value) for value in node]
        return node

    inlined = inline(schema)
    assert isinstance(inlined, dict)
    return inlined


Provider = Literal["claude-cli", "anthropic", "openai"]
Spent = Literal["extracted", "repaired", "fell_back", "over_budget"]


class LLMUsed(msgspec.Struct, kw_only=True):
    """One LLM extraction of a session: which provider and model, the tokens it spent, and how
    it ended (extracted, extracted after one repair, or fell back on the deterministic
    extractor, with why)."""

    provider: Provider
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    outcome: Spent
    reason: str = ""
