"""Run the emulator: uvicorn in a background thread on 127.0.0.1 and a free port.

`SimServer` is what tests, the demo and the benchmarks start; ``orchestrator
sim serve`` runs the same application in the foreground.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType

import uvicorn

from orchestrator.logs import get_logger
from orchestrator_sim.app import build_app
from orchestrator_sim.clock import Clock
from orchestrator_sim.control import ControlClient
from orchestrator_sim.emulator import Emulator

log = get_logger(__name__)

LOOPBACK = "127.0.0.1"


def uvicorn_config(app: object, *, log_level: str = "warning") -> uvicorn.Config:
    """Settings shared by the threaded server and ``sim serve``."""
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        log_level=log_level,
        access_log=False,
        lifespan="off",
        http="h11",
        loop="asyncio",
        timeout_keep_alive=30,
        timeout_graceful_shutdown=2,
        log_config=None,
    )


class SimServer:
    """One running emulator on ``127.0.0.1``; use as a context manager or call start/stop."""

    def __init__(
        self,
        state_dir: Path,
        *,
        port: int = 0,
        clock: Clock | None = None,
        seed: int = 0,
        persist: bool = False,
    ) -> None:
        self.emulator = Emulator(state_dir, clock=clock, seed=seed, persist=persist)
        self._port = port
        self._bound: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._bound is None:
            raise RuntimeError("the emulator is not running")
        return self._bound

    @property
    def url(self) -> str:
        """Base URL of the REST API (PyGithub's ``base_url``)."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def graphql_url(self) -> str:
        return f"{self.url}/graphql"

    def git_url(self, owner: str, repo: str) -> str:
        """Clone URL of a repository (credentials go in a header or the URL)."""
        return f"{self.url}/{owner}/{repo}.git"

    @property
    def control(self) -> ControlClient:
        return ControlClient(self.url)

    def start(self, timeout: float = 10.0) -> SimServer:
        """Bind the port, start serving in a thread, and return once requests are accepted."""
        if self._thread is not None:
            raise RuntimeError("the emulator is already running")
        # uvicorn binds the port itself: handing it a pre-bound socket makes every
        # keep-alive answer wait for a delayed ACK (about 40 ms).
        config = uvicorn_config(build_app(self.emulator))
        config.host = LOOPBACK
        config.port = self._port
        self._server = uvicorn.Server(config)
        server = self._server
        self._thread = threading.Thread(target=server.run, name="sim-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the emulator did not start")
            time.sleep(0.005)
        self._bound = int(server.servers[0].sockets[0].getsockname()[1])
        log.info("sim_started", url=self.url)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving, wait for the thread, save the snapshot when persisting."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(timeout)
        self._bound = None
        self._thread = None
        self._server = None
        self.emulator.save()

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
