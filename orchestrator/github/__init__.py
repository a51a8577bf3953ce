"""The only code that talks to GitHub: a PyGithub-based client with conditional
requests, a bounded retry policy, cost accounting, and the idempotent runtime
helpers the daemon uses for every read and write.
"""
