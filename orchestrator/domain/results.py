"""The finding severity under its earlier import path.

The result-file parsers live in :mod:`orchestrator.domain.agent_files`; two
modules (``domain/policy.py``, ``workflow/schema.py``) still import
:class:`Severity` from here. Import it from
:mod:`orchestrator.domain.agent_files.review` instead.
"""

from orchestrator.domain.agent_files.review import Severity

__all__ = ["Severity"]
