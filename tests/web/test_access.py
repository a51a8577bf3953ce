"""Who the server answers, over HTTP: the metrics token, and Host checks against DNS rebinding."""

from __future__ import annotations

import httpx
import pytest
from structlog.testing import capture_logs

from orchestrator.web.hosts import HostRule, host_name
from tests.web.conftest import Site

TOKEN = "s3cret-api-token"
METRICS_TOKEN = "prometheus-scrape-token"
READ_PATHS = ("/", "/api/v1/state", "/metrics", "/issues/acme/app/7")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_metrics_accept_the_metrics_token_and_the_api_token(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(TOKEN, metrics_token=METRICS_TOKEN)
    assert httpx.get(f"{site.url}/metrics").status_code == 401
    assert httpx.get(f"{site.url}/metrics", headers=bearer("nope")).status_code == 401
    scraped = httpx.get(f"{site.url}/metrics", headers=bearer(METRICS_TOKEN))
    assert scraped.status_code == 200 and "orchestrator_ticks_total 42.0" in scraped.text
    assert httpx.get(f"{site.url}/metrics", headers=bearer(TOKEN)).status_code == 200
    # The metrics token opens nothing else.
    for path in ("/", "/api/v1/state", "/issues/acme/app/7"):
        assert httpx.get(f"{site.url}{path}", headers=bearer(METRICS_TOKEN)).status_code == 401
        assert httpx.get(f"{site.url}{path}", headers=bearer(TOKEN)).status_code == 200
    refused = httpx.post(f"{site.url}/api/v1/brake", headers=bearer(METRICS_TOKEN))
    assert refused.status_code == 401 and not (site.tmp / "brake").exists()


def test_metrics_token_alone_guards_only_the_metrics(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(metrics_token=METRICS_TOKEN)
    denied = httpx.get(f"{site.url}/metrics")
    assert denied.status_code == 401 and denied.json()["error"]["code"] == "unauthorized"
    assert httpx.get(f"{site.url}/metrics", headers=bearer(METRICS_TOKEN)).status_code == 200
    assert httpx.get(f"{site.url}/api/v1/state").status_code == 200
    assert httpx.post(f"{site.url}/api/v1/refresh").status_code == 403


def test_api_token_alone_still_guards_the_metrics(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(TOKEN)
    assert httpx.get(f"{site.url}/metrics").status_code == 401
    assert httpx.get(f"{site.url}/metrics", headers=bearer(TOKEN)).status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LocalHost", "[::1]"])
def test_loopback_names_are_answered_with_or_without_the_port(site_factory, host: str) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    port = site.url.rsplit(":", 1)[1]
    for value in (host, f"{host}:{port}", f"{host}:1234"):
        for path in READ_PATHS:
            response = httpx.get(f"{site.url}{path}", headers={"Host": value})
            assert response.status_code == 200, (value, path, response.text)


def test_other_hosts_are_refused_without_a_token_and_logged_once(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory()
    with capture_logs() as logs:
        for path in READ_PATHS:
            response = httpx.get(f"{site.url}{path}", headers={"Host": "rebind.attacker.test:80"})
            assert response.status_code == 421, path
            assert response.headers["content-type"].startswith("text/plain")
            assert "server.allowed_hosts" in response.text
        other = httpx.get(f"{site.url}/", headers={"Host": "10.9.8.7"})
        assert other.status_code == 421
        write = httpx.post(f"{site.url}/api/v1/brake", headers={"Host": "rebind.attacker.test"})
        assert write.status_code == 421 and not (site.tmp / "brake").exists()
    refused = [entry for entry in logs if entry["event"] == "web_host_refused"]
    assert [(entry["host"], entry["log_level"]) for entry in refused] == [
        ("rebind.attacker.test", "warning"),
        ("10.9.8.7", "warning"),
    ]
    # Health checks reveal nothing and are answered whatever the Host.
    assert httpx.get(f"{site.url}/healthz", headers={"Host": "rebind.attacker.test"}).json() == {
        "status": "ok"
    }
    assert httpx.get(f"{site.url}/readyz", headers={"Host": "10.9.8.7"}).status_code == 200


def test_allowed_hosts_are_answered(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(allowed_hosts=("orchestrator.example.com",))
    named = httpx.get(f"{site.url}/api/v1/state", headers={"Host": "Orchestrator.Example.com:443"})
    assert named.status_code == 200 and named.json()["issues"]
    assert httpx.get(f"{site.url}/", headers={"Host": "example.com"}).status_code == 421


def test_a_token_guards_instead_of_the_host_check(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(TOKEN)
    proxied = {"Host": "orchestrator.example.com", **bearer(TOKEN)}
    assert httpx.get(f"{site.url}/api/v1/state", headers=proxied).status_code == 200
    rebound = httpx.get(f"{site.url}/api/v1/state", headers={"Host": "rebind.attacker.test"})
    assert rebound.status_code == 401


def test_a_wildcard_address_answers_ip_addresses_and_loopback_names(site_factory) -> None:  # type: ignore[no-untyped-def]
    site: Site = site_factory(host="0.0.0.0")
    url = site.url.replace("0.0.0.0", "127.0.0.1")
    for host in ("10.1.2.3:8080", "[fd00::7]:8080", "localhost:8080", "127.0.0.1"):
        assert httpx.get(f"{url}/metrics", headers={"Host": host}).status_code == 200, host
    assert httpx.get(f"{url}/", headers={"Host": "orchestrator.example.com"}).status_code == 421
    probe = httpx.get(f"{url}/readyz", headers={"Host": "orchestrator.example.com"})
    assert probe.status_code == 200


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("example.com:8080", "example.com"),
        ("[::1]:8080", "::1"),
        ("::1", "::1"),
        ("EXAMPLE.com.", "example.com"),
        ("127.0.0.1", "127.0.0.1"),
    ],
)
def test_host_name_drops_the_port_and_brackets(header: str, name: str) -> None:
    assert host_name(header) == name


def test_a_star_in_allowed_hosts_answers_any_host() -> None:
    assert HostRule.of("127.0.0.1", ["*"]).accepts("anything.test")
    assert not HostRule.of("127.0.0.1", ["a.test"]).accepts("anything.test")
    assert HostRule.of("10.0.0.5").accepts("10.0.0.5:8080")
    assert not HostRule.of("10.0.0.5").accepts("localhost")
