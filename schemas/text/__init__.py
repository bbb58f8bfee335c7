"""Text as reverie reads and gives it, standard library only (the hook imports it): what is
Claude Code's own (harness.py: wrappers, notices, compaction summaries), a prompt's gist for
recall (gist.py), the fence around what the hooks inject (fence.py), what a shell command runs
and what its output says (commands.py), and what the user's words say of the agent's work
(verdicts.py)."""
