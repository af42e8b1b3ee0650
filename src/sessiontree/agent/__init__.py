"""The agent harness: drives a model against a session with turn snapshots, buffered writes and save points."""
