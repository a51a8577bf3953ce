"""``python -m orchestrator``: the same command line as the ``orchestrator`` script."""

from orchestrator.cli import main

if __name__ == "__main__":
    main()
