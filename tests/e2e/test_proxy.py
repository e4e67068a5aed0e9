"""Behind a reverse proxy: the URL a DPoP proof must name is the public one, from
`--public-url` or from the forwarded headers of a trusted proxy, never from anyone else's.

And behind a real nginx running the configuration docs/deploy.md gives (the very text, its
ports and paths replaced), when nginx is installed: Connect, gRPC-Web and gRPC calls, a
watch that gets each change at once, and the client's address, not nginx's, in the access
line and the audit trail."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from joserfc import jwk

from tests.connect import JSON, headers
from tests.dpop import make_proof, new_key, thumbprint
from tests.e2e.server import Server, free_port, run_serve, serving
from tests.e2e.test_durable import ENV, seed
from tests.e2e.test_tls import Pki, make_pki
from tests.e2e.test_watch import item_body
from tests.e2e.watch_client import Ended, watching
from tests.world import World
from zkplatform.store import open_store
from zkplatform_api.grpc.health.v1 import health_pb2
from zkplatform_api.platform.v1 import vault_pb2, vault_pb2_grpc

MINT = "/platform.v1.BrokerService/MintUserApiToken"
DELETE = "/platform.v1.VaultService/DeleteItem"
CONNECT = {"Connect-Protocol-Version": "1", "Connection": "close"}  # one request per proxied connection
STYLES = {
    "forwarded": lambda: [b'Forwarded: for="127.0.0.1";proto=https;host="zk.example.com:8443"'],
    "x-forwarded": lambda: [b"X-Forwarded-Proto: https", b"X-Forwarded-Host: zk.example.com:8443"],
}
PUBLIC = "https://zk.example.com:8443"


@asynccontextmanager
async def reverse_proxy(upstream: str, added: list[bytes]) -> AsyncIterator[str]:
    """A reverse proxy on 127.0.0.1 that adds `added` header lines to each request's head
    and forwards the bytes both ways; its URL."""
    host, port = upstream.removeprefix("http://").split(":")

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        head = await client_reader.readuntil(b"\r\n\r\n")
        request_line, _, rest = head.partition(b"\r\n")
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
        server_writer.write(b"\r\n".join([request_line, *added, rest]))
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    proxy = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with proxy:
        yield f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}"


def _alice(server: Server) -> str:
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return str(next(p["token"] for p in credentials["tenants"][0]["principals"] if p["principalId"] == "alice"))


async def bound_token(client: httpx.AsyncClient, via: str, origin: str, parent: str, key: jwk.Key) -> str:
    """A token bound to `key`, minted through `via` with a proof naming `origin`."""
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.delete"], "popKeyId": thumbprint(key)}
    proof = make_proof(key, origin + MINT, parent)
    headers = {**CONNECT, "Authorization": f"Bearer {parent}", "DPoP": proof}
    response = await client.post(via + MINT, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return str(response.json()["token"]["accessToken"])


async def delete(
    client: httpx.AsyncClient, via: str, origin: str, token: str, key: jwk.Key, item: str
) -> httpx.Response:
    headers = {**CONNECT, "Authorization": f"DPoP {token}", "DPoP": make_proof(key, origin + DELETE, token)}
    body = {"vaultId": "acme-private", "itemId": item, "baseVersion": "1"}
    return await client.post(via + DELETE, json=body, headers=headers)


def refused_for_htu(response: httpx.Response) -> bool:
    return response.status_code == 401 and "htu does not match" in response.json()["message"]


@pytest.fixture(scope="module")
def public_url_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("public"), "--dev", "--public-url", PUBLIC) as server:
        yield server


@pytest.fixture(scope="module")
def trusting_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("trusting"), "--dev", "--forwarded-allow-ips", "127.0.0.0/8") as server:
        yield server


@pytest.fixture(scope="module")
def distrusting_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("distrusting"), "--dev", "--forwarded-allow-ips", "10.0.0.0/8") as server:
        yield server


async def test_a_bound_token_works_through_the_proxy_with_the_public_url(public_url_server: Server) -> None:
    server, key = public_url_server, new_key("ec")
    async with reverse_proxy(server.base_url, []) as proxy, httpx.AsyncClient(timeout=10) as client:
        token = await bound_token(client, proxy, PUBLIC, _alice(server), key)
        public = await delete(client, proxy, PUBLIC, token, key, "item-1")
        internal = await delete(client, proxy, server.base_url, token, key, "item-2")
        direct_internal = await delete(client, server.base_url, server.base_url, token, key, "item-3")

    assert public.status_code == 200, public.text
    assert public.json()["item"]["deleted"] is True
    assert refused_for_htu(internal), internal.text
    assert refused_for_htu(direct_internal), direct_internal.text


@pytest.mark.parametrize("style", STYLES)
async def test_forwarded_headers_of_a_trusted_proxy_name_the_public_url(trusting_server: Server, style: str) -> None:
    server, key = trusting_server, new_key("ed25519")
    item, other = ("item-1", "item-2") if style == "forwarded" else ("item-3", "item-4")
    async with reverse_proxy(server.base_url, STYLES[style]()) as proxy, httpx.AsyncClient(timeout=10) as client:
        token = await bound_token(client, proxy, PUBLIC, _alice(server), key)
        public = await delete(client, proxy, PUBLIC, token, key, item)
        internal = await delete(client, proxy, server.base_url, token, key, other)
        addressed = await delete(client, proxy, proxy, token, key, other)

    assert public.status_code == 200, public.text
    assert refused_for_htu(internal), internal.text
    assert refused_for_htu(addressed), addressed.text


@pytest.mark.parametrize("style", STYLES)
async def test_forwarded_headers_of_an_untrusted_peer_are_ignored(distrusting_server: Server, style: str) -> None:
    server, key = distrusting_server, new_key("ec")
    item = "item-1" if style == "forwarded" else "item-2"
    async with reverse_proxy(server.base_url, STYLES[style]()) as proxy, httpx.AsyncClient(timeout=10) as client:
        forwarded = await delete(
            client, proxy, PUBLIC, await bound_token(client, proxy, proxy, _alice(server), key), key, item
        )
        token = await bound_token(client, proxy, proxy, _alice(server), key)  # the URL the client addressed
        addressed = await delete(client, proxy, proxy, token, key, item)

    assert refused_for_htu(forwarded), forwarded.text
    assert addressed.status_code == 200, addressed.text


def test_a_bad_public_url_or_allowed_ip_is_one_line(tmp_path: Path) -> None:
    bad_url = run_serve(tmp_path, "--store", "memory:", "--public-url", "https://zk.example.com/api")
    bad_host = run_serve(tmp_path, "--store", "memory:", "--public-url", "https://[v1.x]")
    bad_ips = run_serve(tmp_path, "--store", "memory:", "--forwarded-allow-ips", "127.0.0.1,proxy")

    for result, message in (
        (bad_url, "must be https://HOST[:PORT]"),
        (bad_host, "not 'https://[v1.x]'"),
        (bad_ips, "'proxy'"),
    ):
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert message in result.stderr


# --- Through a real nginx, configured as docs/deploy.md says -------------------------------------

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "docs" / "deploy.md"
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)
needs_nginx = pytest.mark.skipif(
    NGINX is None, reason="nginx is not installed (make install installs it from Debian's packages as root)"
)
HEARTBEAT = 60  # seconds: a proxy holding stream messages back would hold them past every bound below
LATENCY = 5.0  # seconds a change may take to reach a watch through nginx (milliseconds in practice)
WITHIN = 20.0  # seconds: bounds a watch test that fails
START_S = STOP_S = 10.0
CLIENT = "127.0.0.2"  # the client's address: nginx, and so the server's peer, is 127.0.0.1
SERVICE = "/platform.v1.VaultService"


def documented_nginx_config() -> str:
    """The one nginx configuration of docs/deploy.md."""
    blocks = re.findall(r"^```nginx\n(.*?)^```$", DEPLOY.read_text(), re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, "docs/deploy.md should hold exactly one nginx configuration, the one tested here"
    return str(blocks[0])


def replaced(text: str, replacements: dict[str, str]) -> str:
    for old, new in replacements.items():
        assert old in text, f"docs/deploy.md's nginx configuration has no {old!r} any more: update this test"
        text = text.replace(old, new)
    return text


@dataclass
class Nginx:
    url: str  # https://127.0.0.1:PORT
    address: str  # 127.0.0.1:PORT, for gRPC
    pki: Pki
    directory: Path
    process: subprocess.Popen[bytes]

    def error_log(self) -> str:
        path = self.directory / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""


def nginx_config(directory: Path, port: int, upstream: str, pki: Pki) -> str:
    """nginx.conf: the documented configuration inside an http {} block, on 127.0.0.1:`port`,
    passing to `upstream`, every file of nginx's in `directory`."""
    documented = replaced(
        documented_nginx_config(),
        {
            "listen 443 ssl http2;": f"listen 127.0.0.1:{port} ssl http2;",
            "server 127.0.0.1:8080;": f"server {upstream};",
            "/etc/ssl/zkplatform/fullchain.pem": str(pki.cert),
            "/etc/ssl/zkplatform/privkey.pem": str(pki.key),
            "/var/log/nginx/zkplatform.access.log": str(directory / "access.log"),
        },
    )
    # Not nginx's compiled-in temporary directories and log (/var/lib/nginx, /var/log/nginx): the test's.
    temp = "".join(
        f"    {kind}_temp_path {directory / kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    # Started as root, nginx would run its workers as nobody, who cannot read the test's directories.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return f"{user}worker_processes 1;\nevents {{}}\nhttp {{\n{temp}    access_log off;\n{documented}}}\n"


@contextmanager
def running_nginx(directory: Path, upstream: str) -> Iterator[Nginx]:
    """nginx in the foreground as the current user, on a free port of 127.0.0.1; stopped after."""
    assert NGINX is not None
    pki = make_pki(directory)
    port = free_port()
    config = directory / "nginx.conf"
    config.write_text(nginx_config(directory, port, upstream, pki))
    error_log = directory / "error.log"
    command = [NGINX, "-p", str(directory), "-c", str(config), "-e", str(error_log)]
    command += ["-g", f"daemon off; pid {directory / 'nginx.pid'}; error_log {error_log};"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    nginx = Nginx(f"https://127.0.0.1:{port}", f"127.0.0.1:{port}", pki, directory, process)
    try:
        _wait_until_listening(nginx, port)
        yield nginx
    finally:
        _stop(nginx)


def _wait_until_listening(nginx: Nginx, port: int) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            try:  # the pause between two attempts, watching for nginx's exit meanwhile
                nginx.process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            msg = f"nginx exited with {nginx.process.returncode}:\n{nginx.error_log()}"
            raise AssertionError(msg) from None
        else:
            return
    msg = f"nginx did not listen within {START_S}s:\n{nginx.error_log()}"
    raise AssertionError(msg)


def _stop(nginx: Nginx) -> None:
    """SIGQUIT, nginx's graceful stop; SIGKILL should it not end in time."""
    if nginx.process.poll() is None:
        nginx.process.send_signal(signal.SIGQUIT)
        try:
            nginx.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            nginx.process.kill()
            nginx.process.wait(timeout=STOP_S)


@dataclass
class Deployment:
    """`zkplatform serve` on a seeded SQLite store behind nginx, as docs/deploy.md deploys it."""

    nginx: Nginx
    server: Server
    world: World
    store_url: str

    def client(self, *, http2: bool = False, local_address: str = CLIENT) -> httpx.AsyncClient:
        """A client of nginx connecting from `local_address`."""
        transport = httpx.AsyncHTTPTransport(
            verify=self.nginx.pki.client_context(), http1=not http2, http2=http2, local_address=local_address
        )
        return httpx.AsyncClient(transport=transport, base_url=self.nginx.url, timeout=30)

    def access_line(self, request_id: str) -> dict[str, Any]:
        """The server's access line of the request (bounded wait: lines are written by a thread)."""
        deadline = time.monotonic() + 10
        while True:
            for line in self.server.log().split("\n")[:-1]:  # whole lines: the last may be half written
                if line.startswith("{") and (fields := json.loads(line)).get("request_id") == request_id:
                    return dict(fields)
            assert time.monotonic() < deadline, f"no access line for {request_id}:\n{self.server.log()}"
            time.sleep(0.05)

    def nginx_log(self, until: str) -> str:
        """nginx's access log, once it holds `until` (bounded wait)."""
        path, deadline = self.nginx.directory / "access.log", time.monotonic() + 10
        while until not in (log := path.read_text()):
            assert time.monotonic() < deadline, f"nginx logged no {until!r}:\n{log}"
            time.sleep(0.05)
        return log

    async def audit_event(self, request_id: str) -> dict[str, Any]:
        store = await open_store(self.store_url)
        try:
            records = await store.audit_records("acme", 0, 10_000)
        finally:
            await store.close()
        [event] = [event for record in records if (event := record.exported())["requestId"] == request_id]
        return event


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    directory = tmp_path_factory.mktemp("nginx")
    store_url = f"sqlite:///{directory}/zk.db"
    world = asyncio.run(seed(store_url))
    env = {**ENV, "ZKPLATFORM_WATCH_HEARTBEAT_SECONDS": str(HEARTBEAT)}
    trusting = ("--forwarded-allow-ips", "127.0.0.1", "--log-format", "json")
    with (
        serving(directory, "--store", store_url, *trusting, env=env) as server,
        running_nginx(directory, server.base_url.removeprefix("http://")) as nginx,
    ):
        yield Deployment(nginx, server, world, store_url)


_items = iter(range(1_000_000))


async def create(client: httpx.AsyncClient, token: str, vault_id: str, **extra: str) -> dict[str, Any]:
    body = item_body(vault_id, f"proxied-{next(_items)}")
    response = await client.post(f"{SERVICE}/CreateItem", json=body, headers=headers(JSON, token, **extra))
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


@needs_nginx
@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
async def test_connect_calls_through_nginx(deployment: Deployment, http2: bool) -> None:
    alice = deployment.world.token("alice")
    async with deployment.client(http2=http2) as client:
        health = await client.get("/healthz")
        created = await create(client, alice, "acme-private")
        listed = await client.post(
            f"{SERVICE}/ListItems", json={"vaultId": "acme-private"}, headers=headers(JSON, alice)
        )
        refused = await client.post(f"{SERVICE}/ListItems", json={"vaultId": "acme-private"}, headers=headers(JSON))
        too_big = await client.post(
            f"{SERVICE}/ListItems", json={"vaultId": "x" * 70_000}, headers=headers(JSON, alice)
        )

    assert (health.status_code, health.text, health.http_version) == (200, "ok\n", "HTTP/2" if http2 else "HTTP/1.1")
    assert listed.status_code == 200, listed.text
    assert created["item"]["itemId"] in {item["itemId"] for item in listed.json()["items"]}
    assert (refused.status_code, refused.json()["code"]) == (401, "unauthenticated")
    # Over the server's body limit but under nginx's: the server's own answer, which clients read.
    assert (too_big.status_code, too_big.json()["code"]) == (429, "resource_exhausted")


@needs_nginx
async def test_a_bound_token_works_through_nginx_with_the_forwarded_origin(deployment: Deployment) -> None:
    key = new_key("ec")
    async with deployment.client() as client:
        token = await bound_token(
            client, deployment.nginx.url, deployment.nginx.url, deployment.world.token("alice"), key
        )
        deleted = await delete(client, deployment.nginx.url, deployment.nginx.url, token, key, "item-1")

    assert deleted.status_code == 200, deleted.text


@needs_nginx
@pytest.mark.parametrize(
    ("protocol", "http2"),
    [("connect-json", False), ("connect-proto", True), ("grpc-web", False), ("grpc-web", True)],
    ids=["connect-json-http1", "connect-proto-http2", "grpc-web-http1", "grpc-web-http2"],
)
async def test_a_watch_through_nginx_gets_a_change_at_once(deployment: Deployment, protocol: str, http2: bool) -> None:
    """The server's heartbeat is a minute away: messages arrive at once only if nginx passes each
    on as it comes (`proxy_buffering off`). The watch opens on a backlog of one change (the
    server answers a watch with its first message), then another change must follow at once."""
    bob, alice = deployment.world.token("bob"), deployment.world.token("alice")
    try:
        async with deployment.client(http2=http2) as client, deployment.client() as other, asyncio.timeout(WITHIN):
            backlog = await create(other, alice, "acme-shared")
            since = int(backlog["cursor"]["sequence"]) - 1
            async with watching(client, bob, "acme-shared", since, protocol) as watch:
                first = await watch.next()
                sent = time.monotonic()
                made = await create(other, alice, "acme-shared")
                second = await watch.next()
                arrived = time.monotonic()
    except TimeoutError:
        pytest.fail(f"the watch got nothing through nginx within {WITHIN}s, with the heartbeat {HEARTBEAT}s away")

    assert [changes(first), changes(second)] == [changes_of(backlog), changes_of(made)]
    assert arrived - sent < LATENCY


def changes(message: vault_pb2.WatchChangesResponse | Ended) -> list[tuple[str, int]]:
    assert not isinstance(message, Ended), message
    return [(change.item.item_id, change.sequence) for change in message.changes]


def changes_of(answer: dict[str, Any]) -> list[tuple[str, int]]:
    """What a watch shows of a create's answer."""
    return [(answer["item"]["itemId"], int(answer["cursor"]["sequence"]))]


@needs_nginx
def test_grpc_through_nginx(deployment: Deployment) -> None:
    credentials = grpc.ssl_channel_credentials(root_certificates=deployment.nginx.pki.ca.read_bytes())
    with grpc.secure_channel(deployment.nginx.address, credentials) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        health = check(health_pb2.HealthCheckRequest(), timeout=10)
        stub = vault_pb2_grpc.VaultServiceStub(channel)  # type: ignore[no-untyped-call]
        deleted = stub.DeleteItem(
            vault_pb2.DeleteItemRequest(vault_id="acme-private", item_id="item-2", base_version=1),
            metadata=[("authorization", f"Bearer {deployment.world.token('alice')}")],
            timeout=10,
        )
        with pytest.raises(grpc.RpcError) as refused:
            stub.DeleteItem(vault_pb2.DeleteItemRequest(vault_id="acme-private", item_id="item-2"), timeout=10)

    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert (deleted.item.item_id, deleted.item.deleted) == ("item-2", True)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


@needs_nginx
async def test_a_grpc_watch_through_nginx_gets_a_change_at_once(deployment: Deployment) -> None:
    """As the Connect watch above, through grpc_pass."""
    bob, alice = deployment.world.token("bob"), deployment.world.token("alice")
    credentials = grpc.ssl_channel_credentials(root_certificates=deployment.nginx.pki.ca.read_bytes())
    async with deployment.client() as other, grpc.aio.secure_channel(deployment.nginx.address, credentials) as channel:
        backlog = await create(other, alice, "acme-shared")
        stub = vault_pb2_grpc.VaultServiceStub(channel)  # type: ignore[no-untyped-call]
        stream = stub.WatchChanges(
            vault_pb2.WatchChangesRequest(
                vault_id="acme-shared", since_sequence=int(backlog["cursor"]["sequence"]) - 1
            ),
            metadata=[("authorization", f"Bearer {bob}")],
            timeout=WITHIN,  # bounds every read below
        )
        first = await stream.read()
        sent = time.monotonic()
        made = await create(other, alice, "acme-shared")
        second = await stream.read()
        arrived = time.monotonic()
        stream.cancel()

    assert [changes(first), changes(second)] == [changes_of(backlog), changes_of(made)]
    assert arrived - sent < LATENCY


BUF = Path(sys.executable).parent / "buf"
REFLECTED_S = 20.0  # seconds for a call by reflection (a second in practice; nginx held it 60 s)


@needs_nginx
@pytest.mark.skipif(not BUF.exists(), reason="buf is not installed in the environment (make install)")
@pytest.mark.parametrize("protocol", ["connect", "grpcweb", "grpc"])
def test_buf_curl_by_reflection_through_nginx(deployment: Deployment, protocol: str) -> None:
    """buf curl learns the schema by server reflection, a stream of requests each written once
    the answer to the one before was read, in the protocol of the call: nginx must pass each
    on as it comes. Buffered whole, the body never ended and buf curl hung 60 s, then failed."""
    started = time.monotonic()
    try:
        result = subprocess.run(
            [
                str(BUF),
                "curl",
                "--cacert",
                str(deployment.nginx.pki.ca),
                "--protocol",
                protocol,
                "-H",
                f"Authorization: Bearer {deployment.world.token('bob')}",
                "-d",
                json.dumps({"vaultId": "acme-shared", "pageSize": 1}),
                f"{deployment.nginx.url}{SERVICE}/ListItems",
            ],
            capture_output=True,
            text=True,
            timeout=REFLECTED_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"buf curl --protocol {protocol} got no answer through nginx within {REFLECTED_S}s")
    took = time.monotonic() - started

    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["items"]) == 1
    assert took < REFLECTED_S


# A client naming other addresses itself: nginx appends the address it saw, and drops Forwarded.
SPOOFED = {"X-Forwarded-For": "198.51.100.1", "Forwarded": "for=198.51.100.2"}


@needs_nginx
@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
async def test_the_client_address_through_nginx_reaches_the_access_line_and_the_audit_trail(
    deployment: Deployment, http2: bool
) -> None:
    request_id = f"connect-through-nginx-{'h2' if http2 else 'h1'}"
    async with deployment.client(http2=http2) as client:
        await create(client, deployment.world.token("alice"), "acme-private", **{"X-Request-Id": request_id}, **SPOOFED)

    line = deployment.access_line(request_id)
    event = await deployment.audit_event(request_id)
    assert (line["protocol"], line["code"]) == ("connect", "ok")
    assert line["peer"] == CLIENT  # neither nginx's 127.0.0.1:PORT nor what the client claimed
    assert event["clientAddress"] == CLIENT


@needs_nginx
async def test_the_client_address_of_a_grpc_call_through_nginx(deployment: Deployment) -> None:
    """gRPC by hand over HTTP/2 (grpcio cannot choose its local address): the access line
    is what tells the call's outcome and peer."""
    request = vault_pb2.DeleteItemRequest(vault_id="acme-private", item_id="item-3", base_version=1)
    payload = request.SerializeToString()
    grpc_headers = {
        "Content-Type": "application/grpc",
        "TE": "trailers",
        "Authorization": f"Bearer {deployment.world.token('alice')}",
        "X-Request-Id": "grpc-through-nginx",
        **SPOOFED,
    }
    async with deployment.client(http2=True) as client:
        response = await client.post(
            f"{SERVICE}/DeleteItem", content=struct.pack(">BI", 0, len(payload)) + payload, headers=grpc_headers
        )

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/grpc")
    line = deployment.access_line("grpc-through-nginx")
    event = await deployment.audit_event("grpc-through-nginx")
    assert (line["protocol"], line["code"], line["peer"]) == ("grpc", "ok", CLIENT)
    assert event["clientAddress"] == CLIENT


@needs_nginx
async def test_nginx_logs_no_header_and_no_query(deployment: Deployment) -> None:
    alice = deployment.world.token("alice")
    async with deployment.client() as client:
        await create(client, alice, "acme-private", **{"X-Request-Id": "logged-by-nginx", "DPoP": "not-a-proof"})
        await client.get("/healthz", params={"probe": "query-value"}, headers={"User-Agent": "agent-value"})
        await client.get("/healthz", headers={"Referer": "https://elsewhere.example/?x=referer-value"})
        await client.get("/logged-last")  # nginx logs a request once answered: this one's line comes last

    log = deployment.nginx_log("/logged-last")
    assert "request_id=logged-by-nginx" in log  # the server's access line of the call, found from nginx's
    assert log.count('"GET /healthz HTTP/1.1"') >= 2
    secrets = (alice, "not-a-proof", "query-value", "agent-value", "referer-value")
    assert [secret for secret in secrets if secret in log] == []
