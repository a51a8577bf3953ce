"""WORKFLOW.md files written for OpenAI's Symphony or pi-symphony.

``keys`` lists their keys and what each is read as here, ``reading`` reads
them when such a file loads, and ``migrate`` rewrites the file in this
product's own keys (``orchestrator migrate-workflow``).
"""
