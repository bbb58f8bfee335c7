"""The dependencies a project declares, read from the manifests its agent read or wrote:
package.json, pyproject.toml, requirements*.txt, Cargo.toml, go.mod, mix.exs (and what an
edit adds to a manifest whose dependencies each read on their own: go.mod, mix.exs,
requirements).

Each dependency is a `library` entity; the project `depends_on` it (what it runs with) or
`uses` it (a development dependency), with the version it asks for. A manifest that cannot be
parsed gives nothing: a half-read file is no evidence of what is not in it.
"""

import json
import os
import re
import tomllib
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from schemas.events import Event
from workers.evidence.tool_uses import ToolUse, tool_uses

MANIFESTS = ("package.json", "pyproject.toml", "Cargo.toml", "go.mod", "mix.exs")
_FRAGMENTS = ("go.mod", "mix.exs")  # whose every dependency reads on its own, even in an edit
_REQUIREMENTS = re.compile(r"^requirements[\w.-]*\.txt$")
_NUMBERED = re.compile(r"(?m)^ *\d+→")  # how Read shows a file to the model: "    12→line"
_PEP508 = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)")
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?(?P<name>[\w.\-/]+\.[\w.\-/]+)\s+(?P<version>v[\w.\-+]+)", re.M)
_MIX_COMMENT = re.compile(r"(?m)#.*$")
_MIX_DEV = re.compile(r"only:\s*(?::dev|:test|\[\s*:(?:dev|test))")
_MIX_DEP = re.compile(
    r"\{\s*:(?P<name>\w+)\s*,\s*(?:\"(?P<version>[^\"]+)\"|(?P<source>\w+):)(?P<rest>[^}]*)\}"
)


class Dependency(msgspec.Struct, frozen=True):
    name: str
    version: str  # as the manifest asks for it ("" if it names none)
    dev: bool
    manifest: str  # its path, as the tool named it
    event_id: str


def dependencies(events: Iterable[Event]) -> Iterator[Dependency]:
    """Every dependency the manifests among `events` declare (read whole, or written)."""
    for use in tool_uses(events):
        if use.failed or (found := _manifest(use)) is None:
            continue
        path, text = found
        try:
            for name, version, dev in _parse(os.path.basename(path), text):
                yield Dependency(name, version.strip(), dev, path, use.event.id)
        except (ValueError, TypeError, AttributeError, KeyError):  # a partial read, or not what it claims
            continue


def _manifest(use: ToolUse) -> tuple[str, str] | None:
    tool, given = use.name, use.given
    if not isinstance(path := given.get("file_path"), str):
        return None
    name = os.path.basename(path)
    if name not in MANIFESTS and not _REQUIREMENTS.match(name):
        return None
    if tool == "Write":
        text = given.get("content")
    elif tool == "Edit" and (
        name in _FRAGMENTS or _REQUIREMENTS.match(name)
    ):  # what an edit adds, where a line says a dependency
        text = given.get("new_string")
    elif tool == "Read" and not given.get("offset") and not given.get("limit"):
        response = use.payload.get("tool_response")
        file = response.get("file") if isinstance(response, dict) else None
        text = file.get("content") if isinstance(file, dict) else response
        text = _NUMBERED.sub("", text) if isinstance(text, str) else None
    else:
        return None
    return (path, text) if isinstance(text, str) and text.strip() else None


def _parse(name: str, text: str) -> Iterator[tuple[str, str, bool]]:
    if name == "package.json":
        manifest = json.loads(text)
        for section, dev in (("dependencies", False), ("peerDependencies", False), ("devDependencies", True)):
            for dep, version in (manifest.get(section) or {}).items():
                yield dep, str(version), dev
    elif name == "pyproject.toml":
        yield from _pyproject(tomllib.loads(text))
    elif name == "Cargo.toml":
        manifest = tomllib.loads(text)
        for section, dev in (
            ("dependencies", False),
            ("dev-dependencies", True),
            ("build-dependencies", True),
        ):
            for dep, spec in (manifest.get(section) or {}).items():
                yield dep, spec if isinstance(spec, str) else str(spec.get("version", "")), dev
    elif name == "go.mod":
        for found in _GO_REQUIRE.finditer(text):
            yield found["name"], found["version"], False
    elif name == "mix.exs":
        for found in _MIX_DEP.finditer(_MIX_COMMENT.sub("", text)):
            version = found["version"] or f"from {found['source']}"
            yield found["name"], version, bool(_MIX_DEV.search(found["rest"]))
    else:  # requirements*.txt
        for line in text.splitlines():
            if line.strip() and not line.lstrip().startswith(("#", "-")):
                yield from _pep508(line, dev="dev" in name or "test" in name)


def _pyproject(manifest: dict[str, Any]) -> Iterator[tuple[str, str, bool]]:
    project = manifest.get("project") or {}
    for line in project.get("dependencies") or []:
        yield from _pep508(line, dev=False)
    for extra in (project.get("optional-dependencies") or {}).values():
        for line in extra:
            yield from _pep508(line, dev=True)
    for group in (manifest.get("dependency-groups") or {}).values():
        for line in group:
            if isinstance(line, str):
                yield from _pep508(line, dev=True)
    poetry = (manifest.get("tool") or {}).get("poetry") or {}
    for dep, spec in (poetry.get("dependencies") or {}).items():
        if dep != "python":
            yield dep, spec if isinstance(spec, str) else str(spec.get("version", "")), False


def _pep508(line: str, dev: bool) -> Iterator[tuple[str, str, bool]]:
    if found := _PEP508.match(line):
        yield found["name"], found["spec"].strip(), dev
