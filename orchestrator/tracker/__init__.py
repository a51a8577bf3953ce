"""The tracker interface (fetch candidates, refresh by id, set the tracker state),
with the GitHub Issues adapter and an in-memory adapter for tests.
"""
