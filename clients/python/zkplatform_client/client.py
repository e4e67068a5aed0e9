"""The platform's clients, over one HTTP transport, with auth, interceptors and TLS options.

    async with clients("https://vault.example", token=get_token, ca=Path("ca.pem")) as platform:
        await platform.vault.get_item(GetItemRequest(...), use_get=True)

The generated clients (`VaultServiceClient`, `BrokerServiceClient`, `DirectoryServiceClient`) stay
usable on their own: this only builds what they take (`interceptors`, `http_client`, `codec`,
`protocol`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.interceptor import Interceptor
from connectrpc.protocol import ProtocolType
from pyqwest import Client, HTTPTransport, HTTPVersion

from zkplatform_api.platform.v1.broker_connect import BrokerServiceClient
from zkplatform_api.platform.v1.directory_connect import DirectoryServiceClient
from zkplatform_api.platform.v1.vault_connect import VaultServiceClient
from zkplatform_client.auth import AuthInterceptor, TokenCallback, TokenProvider
from zkplatform_client.dpop import DPoPKey
from zkplatform_client.exit_guard import install as install_exit_guard

Protocol = Literal["connect-json", "connect-binary", "grpc", "grpc-web"]
HttpVersion = Literal["1.1", "2"]

# Whoever imports the package's clients may end the interpreter right after a call: make that
# exit a plain one (exit_guard says why it could abort).
install_exit_guard()

_PROTOCOLS = {
    "connect-json": ProtocolType.CONNECT,
    "connect-binary": ProtocolType.CONNECT,
    "grpc": ProtocolType.GRPC,
    "grpc-web": ProtocolType.GRPC_WEB,
}


class Clients:
    """`vault`, `broker` and `directory`, sharing one transport; closing them closes the transport they made."""

    def __init__(
        self,
        vault: VaultServiceClient,
        broker: BrokerServiceClient,
        owned: HTTPTransport | None,
        directory: DirectoryServiceClient,
    ) -> None:
        self.vault = vault
        self.broker = broker
        self.directory = directory
        self._owned = owned

    async def aclose(self) -> None:
        await self.vault.close()
        await self.broker.close()
        await self.directory.close()
        if self._owned is not None:
            await self._owned.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, _type: type[BaseException] | None, _value: BaseException | None, _traceback: TracebackType | None
    ) -> None:
        await self.aclose()


def http_transport(
    protocol: Protocol = "connect-binary",
    *,
    ca: bytes | str | os.PathLike[str] | None = None,
    http_version: HttpVersion | None = None,
) -> HTTPTransport:
    """A pyqwest transport for the protocol: HTTP/2 for gRPC (with prior knowledge on http://),
    else HTTP/1.1 on http:// and what ALPN agrees on https:// unless `http_version` says.

    `ca`: the certificates (PEM) to trust instead of the system's, for a server whose certificate
    a private CA signed: the PEM bytes, or a file's path. The certificate the server presents
    must be one that CA issued for the server's name, not the CA itself (rustls refuses a
    self-signed `openssl req -x509` certificate with `CaUsedAsEndEntity`; docs/clients.md says how
    to make a CA and a server certificate)."""
    if protocol not in _PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(_PROTOCOLS)}")
    version = {"1.1": HTTPVersion.HTTP1, "2": HTTPVersion.HTTP2, None: None}[http_version]
    if protocol == "grpc":
        if http_version == "1.1":
            raise ValueError("gRPC needs HTTP/2")
        version = HTTPVersion.HTTP2
    if ca is None:
        return HTTPTransport(tls_include_system_certs=True, http_version=version)
    pem = ca if isinstance(ca, bytes) else Path(ca).read_bytes()
    return HTTPTransport(tls_ca_cert=pem, http_version=version)


def clients(  # noqa: PLR0913 # every option has a default
    base_url: str,
    protocol: Protocol = "connect-binary",
    *,
    token: TokenProvider | str | TokenCallback | None = None,
    dpop: DPoPKey | None = None,
    interceptors: Iterable[Interceptor] = (),
    ca: bytes | str | os.PathLike[str] | None = None,
    http_version: HttpVersion | None = None,
    timeout_ms: int | None = None,
    http_client: Client | None = None,
) -> Clients:
    """The VaultService, BrokerService and DirectoryService clients of the server at `base_url`.

    `token`: what authorizes each call (a token, a function returning a fresh one, or a
    TokenProvider); with `dpop`, the key the tokens are bound to, each call carries a proof.
    `interceptors` run before the one that adds the token, so that they never see it and each of
    their attempts gets a proof of its own. `ca` and `http_version`: see `http_transport`; or
    `http_client`, a pyqwest client of your own, which you close."""
    if dpop is not None and token is None:
        raise ValueError("dpop signs the calls of a token: give token too")
    base_url = base_url.rstrip("/")
    chain = list(interceptors)
    if token is not None:
        chain.append(AuthInterceptor(token, dpop=dpop, base_url=base_url))
    owned: HTTPTransport | None = None
    if http_client is None:
        owned = http_transport(protocol, ca=ca, http_version=http_version)
        http_client = Client(owned)
    elif ca is not None or http_version is not None:
        raise ValueError("ca and http_version configure the transport clients() makes: not with http_client")
    codec = google_protobuf_json_codec() if protocol == "connect-json" else google_protobuf_binary_codec()
    kind = _PROTOCOLS[protocol]
    vault = VaultServiceClient(
        base_url, codec=codec, protocol=kind, timeout_ms=timeout_ms, interceptors=chain, http_client=http_client
    )
    broker = BrokerServiceClient(
        base_url, codec=codec, protocol=kind, timeout_ms=timeout_ms, interceptors=chain, http_client=http_client
    )
    directory = DirectoryServiceClient(
        base_url, codec=codec, protocol=kind, timeout_ms=timeout_ms, interceptors=chain, http_client=http_client
    )
    return Clients(vault, broker, owned, directory)
