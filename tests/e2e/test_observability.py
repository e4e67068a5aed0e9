"""Metrics, access lines and traces of a real `zkplatform serve`, with several workers."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.connect import JSON, VAULT_DELETE, headers
from tests.e2e.server import Server, free_port, run_serve, serving
from tests.e2e.test_durable import ENV, delete, seeded
from zkplatform.domain import tokens

DELETE = VAULT_DELETE.removeprefix("/")
MAX_CALLS = 200  # bound on the calls made until both workers have answered


def scrape(metrics_url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = httpx.get(metrics_url, timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def calls(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], code: str) -> float:
    labels = frozenset({"procedure": DELETE, "protocol": "connect", "code": code}.items())
    return samples.get(("zkplatform_rpc_calls_total", labels), 0.0)


def access_lines(server: Server) -> list[dict[str, object]]:
    """The access lines written so far; a line still being written (no newline yet) waits for the next read."""
    written = server.log()
    complete = written[: written.rfind("\n") + 1]
    lines = [json.loads(line) for line in complete.splitlines() if line.strip()]
    return [line for line in lines if line["logger"] == "zkplatform.access"]


def test_two_workers_add_up_their_metrics_and_log_json_lines_without_secrets(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    world = seeded(url)
    alice, bob, unknown = world.token("alice"), world.token("bob"), tokens.new_token()
    metrics_port = free_port()
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    args = ("--store", url, "--workers", "2", "--metrics-bind", f"127.0.0.1:{metrics_port}", "--log-format", "json")
    with serving(tmp_path, *args, env=ENV) as server:
        body = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"}
        echoed: list[bool] = []
        pids: set[object] = set()
        made = 0
        # Each call on a new connection, which the kernel hands to either worker: call until
        # both have answered (bounded), so that the scrape must add up two processes' counts.
        while made < MAX_CALLS and (made < 10 or len(pids) < 2):
            request_id = f"req-{made}"
            response = httpx.post(
                server.base_url + VAULT_DELETE, json=body, headers=headers(JSON, alice, **{"X-Request-Id": request_id})
            )
            assert response.status_code == 200, response.text
            echoed.append(response.headers["x-request-id"] == request_id)
            made += 1
            pids = {line["pid"] for line in access_lines(server)}
        refused = httpx.post(server.base_url + VAULT_DELETE, json=body, headers=headers(JSON, unknown), timeout=10)
        leaked = httpx.post(f"{server.base_url}{VAULT_DELETE}?access_token={bob}", json=body, headers=headers(JSON))
        samples = scrape(metrics_url)
        metrics_text = httpx.get(metrics_url, timeout=10).text
        on_api_port = httpx.get(f"{server.base_url}/metrics", timeout=10)
    log = server.log()

    assert len(pids) == 2, "both workers answered"
    assert all(echoed)
    assert refused.status_code == 401
    assert leaked.status_code == 400
    assert calls(samples, "ok") == made
    assert calls(samples, "unauthenticated") == 1
    assert calls(samples, "invalid_argument") == 1
    assert samples[("zkplatform_auth_refusals_total", frozenset({"reason": "unknown"}.items()))] == 1
    assert on_api_port.status_code == 404  # the API port does not serve the metrics
    lines = access_lines(server)
    assert len([line for line in lines if line["procedure"] == DELETE]) == made + 2
    assert {line["request_id"] for line in lines} >= {f"req-{n}" for n in range(made)}
    for secret in (alice, bob, unknown):
        assert secret not in log
        assert secret not in metrics_text


def test_metrics_need_a_port_of_their_own(tmp_path: Path) -> None:
    port = free_port()
    result = run_serve(
        tmp_path, "--store", "memory:", "--bind", f"127.0.0.1:{port}", "--metrics-bind", f"127.0.0.1:{port}"
    )

    assert result.returncode == 2
    assert "--metrics-bind" in result.stderr
    assert "Traceback" not in result.stderr


def test_spans_go_where_the_otel_variables_say(tmp_path: Path) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    credentials = tmp_path / "dev.json"
    env = {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "vault-e2e"}
    with serving(tmp_path, "--dev", "--dev-credentials", str(credentials), env=env) as server:
        alice = next(
            p["token"]
            for t in json.loads(credentials.read_text())["tenants"]
            for p in t["principals"]
            if p["principalId"] == "alice"
        )
        body = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"}
        traceparent = f"00-{trace_id}-00f067aa0ba902b7-01"
        response = httpx.post(
            server.base_url + VAULT_DELETE, json=body, headers=headers(JSON, alice, traceparent=traceparent)
        )
    log = server.log()  # the console exporter writes the spans out when the server stops

    assert response.status_code == 200, response.text
    assert response.headers["traceparent"].startswith(f"00-{trace_id}-")
    assert '"name": "platform.v1.VaultService/DeleteItem"' in log
    assert f'"trace_id": "0x{trace_id}"' in log
    assert '"enduser.id": "alice"' in log
    assert '"service.name": "vault-e2e"' in log
    assert alice not in log


@pytest.mark.parametrize("workers", ["1", "2"])  # revoked on the serving loop; on a store of its own
def test_a_token_in_a_metrics_url_is_revoked(tmp_path: Path, workers: str) -> None:
    # A URL is logged and shared, whichever port it was sent to: the token in it has leaked.
    url = f"sqlite:///{tmp_path}/zk.db"
    world = seeded(url)
    alice, bob = world.token("alice"), world.token("bob")
    metrics_port = free_port()
    metrics = f"http://127.0.0.1:{metrics_port}"
    args = ("--store", url, "--workers", workers, "--metrics-bind", f"127.0.0.1:{metrics_port}")
    with serving(tmp_path, *args, env=ENV) as server:
        in_query = httpx.get(f"{metrics}/metrics?x={bob}", timeout=30)
        in_path = httpx.get(f"{metrics}/{alice}", timeout=30)
        named = httpx.get(f"{metrics}/metrics?access_token=nothing", timeout=30)
        plain = httpx.get(f"{metrics}/metrics", timeout=30)
        answers = [delete(server, token, "acme-private", "item-1") for token in (alice, bob)]
    log = server.log()

    assert [in_query.status_code, in_path.status_code, named.status_code, plain.status_code] == [400, 400, 400, 200]
    assert "revoked" in in_query.text
    assert [answer.status_code for answer in answers] == [401, 401]
    assert log.count("a token sent in a URL has been revoked") == 2
    assert alice not in log
    assert bob not in log
