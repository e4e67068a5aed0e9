"""The page token of a vault's last 100-item page, asked of the server under test.

ListItems page tokens are opaque and HMAC-protected, so the only way to the last page
is the way a client goes: page through the vault once (1,000 items a page, the most
a page holds, then what leaves exactly one page), over Connect with the binary codec.
A token stays valid while the server runs with the same pepper.
"""

from __future__ import annotations

import http.client

from zkplatform_api.platform.v1 import vault_pb2

MAX_PAGE = 1000
TIMEOUT_S = 120


def last_page_token(port: int, token: str, vault_id: str, vault_size: int, page_size: int = 100) -> str:
    """The token of the page of `page_size` items that ends the vault of `vault_size` live items."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        listed, page_token = 0, ""
        while vault_size - listed > page_size:
            size = min(MAX_PAGE, vault_size - listed - page_size)
            page = _list(connection, token, vault_id, size, page_token)
            if len(page.items) != size or not page.next_page_token:
                msg = f"{vault_id}: a page of {len(page.items)} item(s) after {listed}, {size} asked"
                raise RuntimeError(msg)
            listed, page_token = listed + size, page.next_page_token
        last = _list(connection, token, vault_id, page_size, page_token)
        if len(last.items) != page_size or last.next_page_token:
            msg = f"{vault_id}: the page after {listed} items is not the last {page_size}"
            raise RuntimeError(msg)
        return page_token
    finally:
        connection.close()


def _list(
    connection: http.client.HTTPConnection, token: str, vault_id: str, size: int, page_token: str
) -> vault_pb2.ListItemsResponse:
    request = vault_pb2.ListItemsRequest(vault_id=vault_id, page_size=size, page_token=page_token)
    headers = {
        "Content-Type": "application/proto",
        "Connect-Protocol-Version": "1",
        "Authorization": f"Bearer {token}",
    }
    connection.request("POST", "/platform.v1.VaultService/ListItems", request.SerializeToString(), headers)
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != http.HTTPStatus.OK:
        msg = f"ListItems answered {answer.status}: {body[:300]!r}"
        raise RuntimeError(msg)
    return vault_pb2.ListItemsResponse.FromString(body)
