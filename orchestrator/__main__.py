"""``python -m orchestrator``: the same command line as the installed ``orchestrator``."""

from orchestrator.cli import main

if __name__ == "__main__":
    main()
