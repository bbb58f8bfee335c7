"""The Python interpreters on this machine that reverie supports (pyproject.toml's
requires-python), for tests of what depends on the interpreter's own internals.

Found where they are usually installed: in PATH's folders as `python3.N`, and in pyenv's and
uv's folders. Each is asked for its version (a process each, at collection), and one build is kept
once however many paths lead to it. The interpreter running the tests is always among them.
"""

import ast
import glob
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
_ASKED = "import sys; print(repr((sys.implementation.name, tuple(sys.version_info[:3]), sys.version)))"


class Python(NamedTuple):
    executable: str
    version: tuple[int, int, int]
    build: str  # sys.version: the version, the build's date and its compiler

    @property
    def name(self) -> str:
        return ".".join(map(str, self.version))


def lowest_supported() -> tuple[int, int]:
    """The lowest Python version pyproject.toml's requires-python admits (a `>=X.Y` bound)."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires.startswith(">="), f"requires-python is {requires!r}: teach tests/support/pythons.py"
    major, minor = requires.removeprefix(">=").split(".")[:2]
    return int(major), int(minor)


def supported_pythons() -> list[Python]:
    """Every CPython here that reverie supports, oldest first; the running one always among them."""
    found: dict[str, Python] = {}
    for executable in [sys.executable, *_candidates()]:
        python = _asked(executable)
        if python is not None and python.version[:2] >= lowest_supported():
            found.setdefault(python.build, python)
    return sorted(found.values(), key=lambda p: (p.version, p.build))


def _candidates() -> list[str]:
    folders = os.environ.get("PATH", "").split(os.pathsep)
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    uv = os.path.expanduser("~/.local/share/uv/python")
    found = [  # not pyenv's shims: slow scripts that run what its folders below hold
        *(path for folder in folders if "shims" not in folder for path in _pythons_in(folder)),
        *glob.glob(os.path.join(pyenv, "versions", "*", "bin", "python3")),  # what pyenv's shims run
        *glob.glob(os.path.join(uv, "*", "bin", "python3")),
    ]
    return sorted(set(found))


def _pythons_in(folder: str) -> list[str]:
    return [
        *glob.glob(os.path.join(folder, "python3.[0-9]")),
        *glob.glob(os.path.join(folder, "python3.[0-9][0-9]")),
    ]


def _asked(executable: str) -> Python | None:
    """The interpreter at `executable`, if it runs and is CPython (`_sre` is CPython's)."""
    try:
        ran = subprocess.run(
            [executable, "-S", "-I", "-c", _ASKED], capture_output=True, text=True, timeout=30, check=True
        )
        name, version, build = ast.literal_eval(ran.stdout)
    except (OSError, subprocess.SubprocessError, SyntaxError, ValueError):
        return None  # a pyenv shim for a version not selected, a Python 2: not one of ours
    return Python(executable, version, build) if name == "cpython" else None
