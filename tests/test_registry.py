"""One registry of event kinds: every kind has a payload Struct and a family, every derived kind
is folded by its family and names its subject, and the folds name no kind the registry does not know."""

import re

import pytest

from projections.folds import BY_FAMILY, base
from schemas import kinds
from schemas.registry import DERIVED_KINDS, FAMILIES, KINDS, Family, of_family


def folded_kinds(family: str) -> set[str]:
    """What `family`'s folds name as kinds: SQL strings shaped like one (`'fact.asserted'`)."""
    sql = "\n".join(text for _, text in BY_FAMILY[family].FOLDS)
    return set(re.findall(r"'([a-z_]+\.[a-z_]+)'", sql))


def test_every_family_has_its_folds() -> None:
    assert list(BY_FAMILY) == list(FAMILIES)


def test_every_kind_the_hook_records_is_registered() -> None:
    assert set(kinds.HOOK_KINDS.values()) <= set(KINDS)
    assert all(not KINDS[name].derived for name in kinds.HOOK_KINDS.values())


@pytest.mark.parametrize("family", FAMILIES)
def test_the_folds_name_only_registered_kinds(family: Family) -> None:
    assert folded_kinds(family) <= set(KINDS)
    assert folded_kinds(family) & set(of_family(family))  # and fold some of their own


@pytest.mark.parametrize("kind", sorted(DERIVED_KINDS))
def test_every_derived_kind_is_folded_by_its_family(kind: str) -> None:
    assert kind in folded_kinds(KINDS[kind].family)


def test_what_reads_every_kind_leaves_none_out() -> None:
    # a derived kind names its subject, a field of its payload that the provenance fold reads
    # (or, naming nothing by an id, is about nothing: what an LLM call cost)
    provenance = dict(base.FOLDS)["provenance"]
    for kind in (KINDS[name] for name in sorted(DERIVED_KINDS)):
        fields = set(kind.payload.__struct_fields__)
        if kind.subject is None:
            assert not [f for f in fields if f.endswith("_id")], f"{kind.name} names no subject"
        else:
            assert kind.subject in fields and f"payload->>'{kind.subject}'" in provenance, kind.name
