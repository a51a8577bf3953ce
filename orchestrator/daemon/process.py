"""What the daemon may do to the process it runs in: the entry point's choice, not the daemon's.

``orchestrator run`` owns its process. Before the daemon starts it forbids
inspection of the process (:mod:`orchestrator.daemon.hardening`) and raises its
open-file limit (:mod:`orchestrator.daemon.descriptors`), and it lets the daemon
freeze what its first whole tick read out of the garbage collector's walks.
Each of these acts on the whole process, so a daemon embedded in another
program (a benchmark, a test) leaves the process as it found it.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.daemon.descriptors import DescriptorLimit, current_limit, raise_limit
from orchestrator.daemon.hardening import forbid_inspection


@dataclass(frozen=True)
class ProcessSetup:
    """How the process the daemon runs in was set up, and what the daemon may change in it."""

    # The open-file limits the daemon works within (a quarter of them for web connections).
    descriptors: DescriptorLimit
    # Whether the process's memory and environment are closed to the user's other processes.
    hardened: bool = False
    # Whether the daemon may call gc.freeze() once its first whole tick read everything.
    freeze_heap: bool = False


def own_process() -> ProcessSetup:
    """Make this process the daemon's own: the first step of the command that runs it."""
    hardened = forbid_inspection()
    return ProcessSetup(descriptors=raise_limit(), hardened=hardened, freeze_heap=True)


def shared_process() -> ProcessSetup:
    """The process as it is: the daemon shares it with the program that embeds it."""
    return ProcessSetup(descriptors=current_limit())
