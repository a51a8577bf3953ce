"""Orchestrator: turns GitHub issues into merged pull requests with coding agents."""

__version__ = "0.1.0"
