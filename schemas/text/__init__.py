"""Text as reverie reads and gives it, standard library only (the hook imports it): what is
Claude Code's own (harness.py: wrappers, notices, compaction summaries), a prompt's gist for
recall (gist.py), and the fence around what the hooks inject (fence.py)."""
