"""`orchestrator demo`: the whole flow on the embedded default, with no token and no
network: the GitHub emulator, three labelled issues, a CI simulator, a scripted
agent and a scripted human, and the daemon in merge mode on SQLite.
"""
