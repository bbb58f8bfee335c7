"""What the thinking cost: each LLM extraction's provider, model, tokens and outcome, by day,
which the daily token budget is counted against (workers/llm/)."""

from schemas import kinds

TABLES = """
CREATE TABLE llm_usage (
    event_id VARCHAR PRIMARY KEY, ts TIMESTAMPTZ, day DATE, project VARCHAR, session_id VARCHAR,
    provider VARCHAR, model VARCHAR, input_tokens BIGINT, output_tokens BIGINT, outcome VARCHAR,
    reason VARCHAR
);
"""

FOLDS: list[tuple[str, str]] = [
    (
        "llm_usage",
        f"""
        INSERT INTO llm_usage
        SELECT id, ts, CAST(timezone('UTC', recorded_at) AS DATE), project, session_id,
            payload->>'provider', payload->>'model',
            coalesce(TRY_CAST(payload->>'input_tokens' AS BIGINT), 0),
            coalesce(TRY_CAST(payload->>'output_tokens' AS BIGINT), 0),
            payload->>'outcome', payload->>'reason'
        FROM batch WHERE kind = '{kinds.LLM_USED}'
        """,
    ),
]
