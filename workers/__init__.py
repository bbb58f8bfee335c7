"""Long-running processes: the embedded server, the dispatcher, the RQ workers, the supervisor."""
