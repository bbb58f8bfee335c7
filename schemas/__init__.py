"""The bottom floor: the contracts every room shares (event ids, event kinds and their registry,
settings, and the msgspec Structs at every boundary), and two rooms of standard-library code
every floor and the hook stand on: text/ (what is Claude Code's own, a prompt's gist, the
fence) and disk/ (durable and private files). It imports none of ours.

The package itself imports nothing heavy: the hook path uses `schemas.ids`, `schemas.kinds`,
`schemas.settings` and those two rooms (standard library only) and never pays for msgspec.
"""
