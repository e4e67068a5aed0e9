"""`serve --certfile --keyfile`: TLS with ALPN h2 and http/1.1, for every kind of client,
with a CA and a server certificate for 127.0.0.1 made here."""

from __future__ import annotations

import datetime as dt
import fcntl
import ipaddress
import json
import os
import pty
import shutil
import socket
import ssl
import subprocess
import sys
import termios
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.clients.conftest import PY_CLIENT  # noqa: F401 # the Python package's sources on the path
from tests.e2e.server import Server, run_serve, serving, zkplatform_command
from zkplatform_api.grpc.health.v1 import health_pb2
from zkplatform_api.platform.v1 import vault_pb2
from zkplatform_client import clients

REPO = Path(__file__).resolve().parents[2]
BUF = str(Path(sys.executable).parent / "buf")
DEMO = REPO / "clients" / "ts" / "dist-tools" / "demo.js"
DELETE = "/platform.v1.VaultService/DeleteItem"


@dataclass(frozen=True)
class Pki:
    ca: Path
    cert: Path
    key: Path

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(
    *, digital_signature: bool = False, key_cert_sign: bool = False, crl_sign: bool = False
) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=crl_sign,
        encipher_only=False,
        decipher_only=False,
    )


def make_pki(directory: Path) -> Pki:
    """A CA, and a certificate it signed for localhost and 127.0.0.1: an end-entity certificate
    (CA:FALSE), which rustls (the Python client's TLS) requires; it refuses a self-signed CA
    certificate as the server's with CaUsedAsEndEntity (docs/clients.md makes the same PKI with
    openssl)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("zkplatform test CA"))
        .issuer_name(_name("zkplatform test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(digital_signature=True, key_cert_sign=True, crl_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(directory / "ca.pem", directory / "server.pem", directory / "server-key.pem")
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[Server]:
    tls = ("--certfile", str(pki.cert), "--keyfile", str(pki.key))
    with serving(tmp_path_factory.mktemp("tls"), "--dev", *tls, tls=pki.client_context()) as server:
        yield server


@pytest.fixture(scope="module")
def alice(server: Server) -> str:
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return str(next(p["token"] for p in credentials["tenants"][0]["principals"] if p["principalId"] == "alice"))


def _health_check(channel: grpc.Channel) -> health_pb2.HealthCheckResponse:
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=health_pb2.HealthCheckResponse.FromString,
    )
    answer: health_pb2.HealthCheckResponse = check(health_pb2.HealthCheckRequest(), timeout=10)
    return answer


def _address(server: Server) -> str:
    return server.base_url.removeprefix("https://")


def _delete_body(vault: str, item: str) -> dict[str, object]:
    return {"vaultId": vault, "itemId": item, "baseVersion": "1"}


def _connect_headers(token: str) -> dict[str, str]:
    return {"Connect-Protocol-Version": "1", "Authorization": f"Bearer {token}"}


def test_the_log_and_the_dev_credentials_name_https(server: Server) -> None:
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())

    assert f"listening on {server.base_url} (1 worker(s)" in server.log()
    assert credentials["baseUrl"] == server.base_url


def test_grpcio_over_a_secure_channel(server: Server, pki: Pki, alice: str) -> None:
    credentials = grpc.ssl_channel_credentials(root_certificates=pki.ca.read_bytes())
    with grpc.secure_channel(_address(server), credentials) as channel:
        health = _health_check(channel)
        delete = channel.unary_unary(
            DELETE,
            request_serializer=vault_pb2.DeleteItemRequest.SerializeToString,
            response_deserializer=vault_pb2.DeleteItemResponse.FromString,
        )
        request = vault_pb2.DeleteItemRequest(vault_id="acme-private", item_id="item-1", base_version=1)
        deleted = delete(request, metadata=(("authorization", f"Bearer {alice}"),), timeout=10)

    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert deleted.item.deleted
    assert deleted.item.version == 2


def test_grpcio_refuses_a_server_it_does_not_trust(server: Server) -> None:
    system_cas = grpc.ssl_channel_credentials()
    with grpc.secure_channel(_address(server), system_cas) as channel, pytest.raises(grpc.RpcError) as refused:
        _health_check(channel)

    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("http2", [True, False], ids=["http2", "http1.1"])
def test_connect_json_with_httpx(server: Server, pki: Pki, alice: str, http2: bool) -> None:
    item = "item-2" if http2 else "item-3"
    with httpx.Client(verify=pki.client_context(), http2=http2, timeout=10) as client:
        response = client.post(
            f"{server.base_url}{DELETE}", json=_delete_body("acme-private", item), headers=_connect_headers(alice)
        )

    assert response.status_code == 200, response.text
    assert response.http_version == ("HTTP/2" if http2 else "HTTP/1.1")  # ALPN offers both
    assert response.json()["item"]["deleted"] is True


@pytest.mark.parametrize("protocol", ["grpc", "connect"])
def test_buf_curl_with_the_ca(server: Server, pki: Pki, alice: str, protocol: str) -> None:
    item = "item-4" if protocol == "grpc" else "item-5"
    result = subprocess.run(
        [
            BUF,
            "curl",
            "--protocol",
            protocol,
            "--cacert",
            str(pki.ca),
            "-H",
            f"Authorization: Bearer {alice}",
            "-d",
            json.dumps(_delete_body("acme-private", item)),
            f"{server.base_url}{DELETE}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["item"]["deleted"] is True


def _node_demo(
    server: Server, alice: str, item: str, other: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The TypeScript demo (its callers ask for the ts_build fixture, which compiles it)."""
    node = shutil.which("node")
    assert node, "node is needed: install Node 20"
    return subprocess.run(
        [node, str(DEMO), server.base_url, "grpc", alice, "acme-shared", item, other],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **env},
    )


def test_the_node_client_over_https_with_http2(server: Server, pki: Pki, alice: str, ts_build: Path) -> None:
    # gRPC in Connect for Node is HTTP/2 only; Node trusts the CA through NODE_EXTRA_CA_CERTS.
    result = _node_demo(server, alice, "item-1", "item-2", {"NODE_EXTRA_CA_CERTS": str(pki.ca)})

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["deleted"]["deleted"] is True
    assert report["repeatedSame"] is True
    assert report["conflict"]["code"] == "Aborted"


def test_the_node_client_refuses_a_server_it_does_not_trust(server: Server, alice: str, ts_build: Path) -> None:
    result = _node_demo(server, alice, "item-3", "item-4", {})

    assert result.returncode != 0
    # unavailable, as the Python package says it (below), not Connect for Node's internal
    assert result.stderr.startswith("[unavailable] ")
    assert "certificate" in result.stderr.lower()


async def test_the_python_client_refuses_a_server_it_does_not_trust(server: Server) -> None:
    """With the system's CAs, none of which signed the test CA: unavailable, as in TypeScript."""
    async with clients(server.base_url) as platform:
        with pytest.raises(ConnectError) as refused:
            await platform.vault.list_items(vault_pb2.ListItemsRequest(vault_id="acme-shared"))

    assert refused.value.code == Code.UNAVAILABLE
    assert "invalid peer certificate: UnknownIssuer" in refused.value.message


def test_plaintext_to_the_tls_port_is_answered_tls_required(server: Server, pki: Pki) -> None:
    http_url = server.base_url.replace("https://", "http://")
    plain = httpx.post(
        f"{http_url}/platform.v1.VaultService/GetItem",
        headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"},
        content=b"{}",
        timeout=10,
    )
    with grpc.insecure_channel(_address(server)) as channel, pytest.raises(grpc.RpcError) as refused:
        _health_check(channel)
    host, port = _address(server).split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = b"".join(iter(lambda: raw.recv(4096), b""))  # to the end: the server closes
    still = httpx.get(f"{server.base_url}/healthz", verify=pki.client_context(), timeout=10)

    assert plain.status_code == 400
    assert plain.headers["connection"] == "close"
    error = plain.json()
    assert error["code"] == "invalid_argument"
    assert "https://" in error["message"]
    assert [d["debug"]["reason"] for d in error["details"] if "reason" in d.get("debug", {})] == ["TLS_REQUIRED"]
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert refused.value.code() != grpc.StatusCode.OK
    assert still.text == "ok\n"
    assert "Traceback" not in server.log()
    assert " ERROR " not in server.log()


def test_a_connection_that_sends_nothing_or_no_tls_is_closed(server: Server, pki: Pki) -> None:
    host, port = _address(server).split(":")
    with socket.create_connection((host, int(port)), timeout=10) as silent:
        silent.shutdown(socket.SHUT_WR)
        assert silent.recv(4096) == b""
    with socket.create_connection((host, int(port)), timeout=10) as binary:
        binary.sendall(bytes(range(1, 64)))  # neither a TLS record nor HTTP
        assert b"".join(iter(lambda: binary.recv(4096), b"")) == b""
    assert httpx.get(f"{server.base_url}/healthz", verify=pki.client_context(), timeout=10).text == "ok\n"
    assert "Traceback" not in server.log()


def test_two_workers_serve_tls(tmp_path: Path, pki: Pki) -> None:
    tls = ("--certfile", str(pki.cert), "--keyfile", str(pki.key))
    with serving(tmp_path, "--store", "memory:", "--workers", "2", *tls, tls=pki.client_context()) as server:
        # Fresh connections, so that the kernel spreads them over both workers.
        answers = [
            httpx.get(f"{server.base_url}/healthz", verify=pki.client_context(), timeout=10).text for _ in range(8)
        ]
    assert answers == ["ok\n"] * 8
    assert f"listening on {server.base_url} (2 worker(s)" in server.log()
    assert server.process.returncode == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--keyfile": None}, "--certfile and --keyfile go together"),
        ({"--certfile": "missing.pem"}, "No such file or directory"),
        ({"--keyfile": "ca"}, "cannot serve TLS with --certfile"),
        ({"--certfile": "key", "--keyfile": "cert"}, "the two are swapped"),
        ({"--keyfile": "cert"}, "--keyfile holds no PEM private key"),
    ],
    ids=["certfile-alone", "missing-certificate", "key-of-another-certificate", "swapped", "certificate-as-key"],
)
def test_an_unusable_certificate_is_one_line(
    tmp_path: Path, pki: Pki, change: dict[str, str | None], message: str
) -> None:
    other_key = make_pki(tmp_path).key
    flags: dict[str, str | None] = {"--certfile": str(pki.cert), "--keyfile": str(pki.key)}
    files = {"ca": str(other_key), "key": str(pki.key), "cert": str(pki.cert)}
    for flag, value in change.items():
        flags[flag] = files.get(value, value) if value is not None else None
    args = [part for flag, value in flags.items() if value is not None for part in (flag, value)]

    result = run_serve(tmp_path, "--store", "memory:", *args)

    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr


def _as_a_shell_starts_it() -> None:
    """In the child: its own session, with the terminal on standard input as its controlling
    terminal, where OpenSSL would ask for a passphrase (/dev/tty)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_an_encrypted_key_is_refused_without_asking_for_its_passphrase(tmp_path: Path, pki: Pki) -> None:
    key = serialization.load_pem_private_key(pki.key.read_bytes(), password=None)
    encrypted = tmp_path / "encrypted-key.pem"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"a passphrase"),
        )
    )
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run(
            [
                zkplatform_command(),
                "serve",
                "--store",
                "memory:",
                "--certfile",
                str(pki.cert),
                "--keyfile",
                str(encrypted),
            ],
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            cwd=tmp_path,
            preexec_fn=_as_a_shell_starts_it,
        )
        os.set_blocking(controller, False)
        try:
            on_the_terminal = os.read(controller, 4096)
        except BlockingIOError:
            on_the_terminal = b""
    finally:
        os.close(controller)
        os.close(terminal)

    assert on_the_terminal == b""
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"--keyfile {encrypted} is encrypted" in result.stderr
