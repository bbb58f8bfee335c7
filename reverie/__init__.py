"""reverie: long-term memory for AI coding agents."""
