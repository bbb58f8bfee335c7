-- Views for people asking questions of their memory (see `reverie sql --help`).

-- What is believed true now.
CREATE VIEW facts_current AS
SELECT * FROM facts
WHERE expired_at IS NULL AND (invalid_at IS NULL OR invalid_at > now());

-- facts_as_of(valid_time, known_time): see FACTS_AS_OF in projections/folds.py.

CREATE VIEW tool_usage_per_day AS
SELECT date_trunc('day', ts) AS day, project, tool, count(*) AS uses,
    count(*) FILTER (outcome = 'error') AS errors, median(duration_ms) AS median_ms
FROM tool_uses
GROUP BY ALL;

-- Everything that happened to an entity (sort by happened_at for its story).
CREATE VIEW entity_timeline AS
SELECT entity_id, name, first_seen AS happened_at, 'first seen' AS what, type AS detail FROM entities
UNION ALL
SELECT e.entity_id, e.name, f.valid_at, 'fact: ' || f.relation, f.description
FROM entities e JOIN facts f ON e.entity_id IN (f.source, f.target)
UNION ALL
SELECT e.entity_id, e.name, f.invalid_at, 'fact ended: ' || f.relation, f.description
FROM entities e JOIN facts f ON e.entity_id IN (f.source, f.target) WHERE f.invalid_at IS NOT NULL
UNION ALL
SELECT e.entity_id, e.name, s.ts, 'signal: ' || s.signal, s.text
FROM entities e JOIN signals s ON s.subject = e.entity_id
UNION ALL
SELECT e.entity_id, e.name, o.formed_at, 'opinion', o.statement
FROM entities e JOIN opinions o ON o.subject = e.entity_id;

-- One row: how healthy memory is. embedding_coverage stays NULL until embeddings exist.
CREATE VIEW memory_health AS
SELECT
    (SELECT count(*) FROM facts_current) AS facts,
    (SELECT 1 - count(DISTINCT lower(description)) / greatest(count(*), 1) FROM facts_current) AS duplicate_ratio,
    NULL::DOUBLE AS embedding_coverage,
    (SELECT count(*) FROM activation_log a JOIN facts_current f ON a.memory_id = f.fact_id)
        / greatest((SELECT count(*) FROM facts_current), 1) AS average_activations,
    (SELECT avg((reconsolidations > 0)::INT) FROM facts) AS reconsolidation_rate,
    (SELECT avg((len(results) > 0)::INT) FROM retrievals) AS retrieval_hit_rate,
    (SELECT histogram(memory_type) FROM facts_current) AS memory_types,
    (SELECT avg(confidence) FROM facts_current) AS average_confidence;
