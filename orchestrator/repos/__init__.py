"""Which repositories the daemon polls, and each one's collaborators (GitHub access, gate, tick)."""
