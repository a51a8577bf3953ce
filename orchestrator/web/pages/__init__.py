"""Server-rendered HTML: the dashboard table and one issue's timeline.

Readable without JavaScript; the dashboard refreshes itself. Every value is
escaped: titles, reasons and prompts come from GitHub users and agents.

``dashboard`` and ``issue`` render the two pages from the presenter's values
(:mod:`orchestrator.web.views`); ``layout`` holds the page shell and the pieces
both show.
"""
