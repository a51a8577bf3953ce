"""The presenter: database rows and the live status turned into view values.

Pages, the JSON API and the terminal table all render these values, so what
an operator sees is the same everywhere.

``dashboard`` presents the dashboard's lines, header and cluster; ``issue``
presents one issue's timeline.
"""
