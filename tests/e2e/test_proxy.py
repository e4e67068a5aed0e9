"""Behind a reverse proxy: the URL a DPoP proof must name is the public one, from
`--public-url` or from the forwarded headers of a trusted proxy, never from anyone else's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from joserfc import jwk

from tests.e2e.server import Server, run_serve, serving
from zkplatform.dpop_proof import make_proof, new_key, thumbprint

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
    bad_ips = run_serve(tmp_path, "--store", "memory:", "--forwarded-allow-ips", "127.0.0.1,proxy")

    for result, message in ((bad_url, "must be https://HOST[:PORT]"), (bad_ips, "'proxy'")):
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert message in result.stderr
