"""The operator's command line: status, issue timelines and unblocking, the brake,
and a pull request's failing checks and review threads.
"""
