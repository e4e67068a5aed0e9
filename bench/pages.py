"""The page token of a vault's last 100-item page, and the cursor of its last 100 changes,
asked of the server under test.

ListItems page tokens are opaque and HMAC-protected, so the only way to the last page
is the way a client goes: page through the vault once (1,000 items a page, the most
a page holds, then what leaves exactly one page), over Connect with the binary codec.
A token stays valid while the server runs with the same pepper. ListChanges cursors are
plain sequence numbers: the last 100 changes follow the vault's sequence less 100.
"""

from __future__ import annotations

import http.client

from google.protobuf.message import Message

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


def last_changes_since(port: int, token: str, vault_id: str, page_size: int = 100) -> int:
    """The cursor after which exactly the vault's last `page_size` changes follow."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        since = _list(connection, token, vault_id, 1, "").cursor.sequence - page_size
        request = vault_pb2.ListChangesRequest(vault_id=vault_id, since_sequence=since, page_size=page_size)
        last = vault_pb2.ListChangesResponse.FromString(_call(connection, token, "ListChanges", request))
        if since < 0 or len(last.changes) != page_size or last.has_more:
            msg = f"{vault_id}: the changes after {since} are not the last {page_size}"
            raise RuntimeError(msg)
        return since
    finally:
        connection.close()


def _list(
    connection: http.client.HTTPConnection, token: str, vault_id: str, size: int, page_token: str
) -> vault_pb2.ListItemsResponse:
    request = vault_pb2.ListItemsRequest(vault_id=vault_id, page_size=size, page_token=page_token)
    return vault_pb2.ListItemsResponse.FromString(_call(connection, token, "ListItems", request))


def _call(connection: http.client.HTTPConnection, token: str, method: str, request: Message) -> bytes:
    headers = {
        "Content-Type": "application/proto",
        "Connect-Protocol-Version": "1",
        "Authorization": f"Bearer {token}",
    }
    connection.request("POST", f"/platform.v1.VaultService/{method}", request.SerializeToString(), headers)
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != http.HTTPStatus.OK:
        msg = f"{method} answered {answer.status}: {body[:300]!r}"
        raise RuntimeError(msg)
    return body
