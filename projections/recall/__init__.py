"""The read side: from a prompt to the few memories that matter (see recall.pipeline)."""
