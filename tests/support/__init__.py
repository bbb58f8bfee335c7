"""What the tests share, apart from pytest's fixtures (tests/conftest.py): one module a concern.

- captures.py: the real Claude Code captures in ../shared (hook payloads, transcripts);
- processes.py: reverie as a user runs it: its command, hook processes, the stack, a user typing
  at its shell, and waiting for what they do;
- events.py: events made by hand for the folds and the dispatcher, at fixed times;
- claude_code.py: the real Claude Code CLI (from the npm registry) and a fake Messages API
  for it to talk to.

No test module imports another's helpers: what two of them use lives here.
"""
