"""A local Linear emulator: a subset of Linear's GraphQL API over an in-memory workspace.

It plays Linear for the Linear tracker's tests and demo, beside the GitHub
emulator and on the same port: teams, workflow states, issues, labels,
comments and attachments, Linear's error shapes and its request and
complexity budgets.
"""
