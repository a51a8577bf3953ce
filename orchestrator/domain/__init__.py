"""The pure decision core: phases, gates, the workpad record and the planner.

Nothing here performs I/O or reads the clock; time is always an argument.
"""
