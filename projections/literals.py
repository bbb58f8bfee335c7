"""SQL literals, for the places that must inline a value (file lists, LanceDB filters)."""


def string_literal(text: str) -> str:
    """`text` as a SQL string literal, in DuckDB's and LanceDB's dialect alike."""
    return "'" + text.replace("'", "''") + "'"
