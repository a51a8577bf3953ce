"""Pure parsers of the result files an agent leaves in ``.orchestrator/`` of its workspace.

Each parser takes the file's text and returns either a typed, frozen value or a
:class:`~orchestrator.domain.agent_files.errors.ResultError` that names the
file, the line when known, the field and the problem. Bad content is never an
exception: it is a failed turn the runtime can report.

- :mod:`.errors`: the located error and the checks every parser shares;
- :mod:`.review`: ``review.md``, the structured review of one head;
- :mod:`.questions`: ``blocked.md`` and ``pr-description.md``;
- :mod:`.fix_summary`: ``fix-summary.json``, the account of each fix.
"""
