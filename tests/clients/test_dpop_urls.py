"""The Python package's DPoP proofs name an http(s) URL of a host and an optional port, as the
server reads one (domain/authority.py): any other is the package's clear ValueError, raised where
the URL is given (AuthInterceptor, clients()), never urllib's own error from deep inside a call."""

from __future__ import annotations

import pytest

from tests.clients.conftest import PY_CLIENT  # noqa: F401 # the package's sources on the path
from zkplatform_client import AuthInterceptor, DPoPKey, clients
from zkplatform_client.dpop import htu

MALFORMED = {
    "https://[v1.x": "malformed",  # brackets that do not close: urllib's "Invalid IPv6 URL" before
    "https://[v1.x]/platform.v1.VaultService/GetItem": "host",  # an address from the future
    "https://[fe80::1%25eth0]/p": "host",  # a zone
    "https://user:secret-password@api.example.com/p": "host",
    "https://api.example.com:99999/p": "malformed",
    "https://api.example.com:0/p": "port",
    "https://api.example.com:/p": "port",
    "ftp://api.example.com/p": "scheme",
    "api.example.com/p": "scheme",
}


@pytest.mark.parametrize(("url", "why"), MALFORMED.items())
def test_a_malformed_url_is_a_clear_value_error_of_the_package(url: str, why: str) -> None:
    with pytest.raises(ValueError, match="a DPoP proof names an http") as refused:
        DPoPKey.generate().proof("POST", url, "a-token")

    assert why in str(refused.value)
    # No urllib error shown with it: none raised, or none chained (`from None`).
    assert refused.value.__cause__ is None
    assert refused.value.__context__ is None or refused.value.__suppress_context__
    assert "secret-password" not in str(refused.value)


@pytest.mark.parametrize("url", ["https://[v1.x", "https://[v1.x]", "http://127.0.0.1:0"])
def test_a_malformed_base_url_is_refused_when_the_client_is_made(url: str) -> None:
    key = DPoPKey.generate()
    with pytest.raises(ValueError, match="a DPoP proof names an http"):
        AuthInterceptor("a-token", dpop=key, base_url=url)
    with pytest.raises(ValueError, match="a DPoP proof names an http"):
        clients(url, token="a-token", dpop=key)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        (
            "https://api.example.com/platform.v1.VaultService/GetItem?x=1#f",
            "https://api.example.com/platform.v1.VaultService/GetItem",
        ),
        ("http://[::1]:8080/p", "http://[::1]:8080/p"),
        ("http://127.0.0.1:8080/p", "http://127.0.0.1:8080/p"),
        ("https://zk_1.internal~a:8443/p", "https://zk_1.internal~a:8443/p"),
    ],
)
def test_urls_of_a_host_and_a_port_are_named_without_query_or_fragment(url: str, named: str) -> None:
    assert htu(url) == named
