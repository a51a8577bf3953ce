#!/usr/bin/env python3
"""Container health check: exit 0 when the daemon answers ``GET /healthz`` with 200.

The URL is ``http://127.0.0.1:$ORCHESTRATOR_SERVER__PORT/healthz`` (port 8080
when unset), or ``$ORCHESTRATOR_HEALTHCHECK_URL`` when that is set.
"""

from __future__ import annotations

import http.client
import os
import sys
import urllib.error
import urllib.request

TIMEOUT_S = 4.0


def health_url(env: dict[str, str]) -> str:
    explicit = env.get("ORCHESTRATOR_HEALTHCHECK_URL")
    if explicit:
        return explicit
    port = env.get("ORCHESTRATOR_SERVER__PORT") or "8080"
    return f"http://127.0.0.1:{port}/healthz"


def check(url: str) -> str | None:
    """None when healthy, else why not."""
    # Proxy variables set for reaching GitHub must not route a loopback check.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=TIMEOUT_S) as response:
            status = int(response.status)
    except urllib.error.HTTPError as error:
        return f"HTTP {error.code}"
    except (OSError, ValueError, http.client.HTTPException) as error:
        return str(error)
    return None if status == 200 else f"HTTP {status}"


def main() -> int:
    url = health_url(dict(os.environ))
    problem = check(url)
    if problem is None:
        return 0
    print(f"unhealthy: {url}: {problem}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
