"""Reflection's settings: a project's disposition, as its `.reverie.toml` says it and as a
request to reflect carries it."""

import os
import tomllib
from typing import Annotated

import msgspec

DISPOSITION_FILE = ".reverie.toml"

Trait = Annotated[int, msgspec.Meta(ge=1, le=5)]


class Disposition(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How a project's reflection weighs evidence (Hindsight's traits, each 1 to 5), read from the
    project's `.reverie.toml`, table `[reflect]`.

    - skepticism: how much evidence an opinion needs before it leaves 50/50;
    - literalism: how closely a memory must match the question to count;
    - empathy: how much the user's own words weigh against what the agent derived;
    - background: what the project is about, said to the LLM when one reflects.
    """

    skepticism: Trait = 3
    literalism: Trait = 3
    empathy: Trait = 3
    background: str = ""


class BadDisposition(ValueError):
    pass


def disposition(root: str | None) -> Disposition:
    """The project's disposition: `[reflect]` of `.reverie.toml` at the root of the worktree,
    else (or with no root) the defaults."""
    if root is None:
        return Disposition()
    path = os.path.join(root, DISPOSITION_FILE)
    try:
        with open(path, "rb") as f:
            table = tomllib.load(f).get("reflect", {})
        return msgspec.convert(table, Disposition)
    except FileNotFoundError:
        return Disposition()
    except (OSError, tomllib.TOMLDecodeError, msgspec.ValidationError) as e:
        raise BadDisposition(f"{path}, [reflect]: {e} (skepticism, literalism, empathy: 1 to 5)") from None
