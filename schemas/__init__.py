"""The contracts every room shares: event ids, event kinds, settings and the msgspec Structs.

The package itself imports nothing heavy: the hook path uses `schemas.ids`, `schemas.kinds`
and `schemas.settings` (standard library only) and never pays for msgspec.
"""
