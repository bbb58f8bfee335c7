"""What events say, read one way by every family of thinking workers: the tool uses of a
session (tool_uses.py), the commands it ran and how they failed (failures.py), what the user's
prompts state (statements.py)."""
