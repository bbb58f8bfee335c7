"""Getting events in: the hook entry point, redaction, the spool, dead letters, transcript import.

Everything the hook imports stays within the standard library (plus `schemas.ids`,
`schemas.kinds`, `schemas.settings`): the hook runs once per Claude Code event and must not
pay for msgspec, redis-py or anything heavier.
"""
