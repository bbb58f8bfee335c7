"""One registry of event kinds: every kind has a payload Struct and a family, every derived kind
is folded by its family, and the folds name no kind the registry does not know."""

import re

import pytest

from projections.folds import BY_FAMILY
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
