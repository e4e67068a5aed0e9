"""Domain values <-> protobuf messages.

Answers that carry items take the server's tombstone retention (`retention`, in seconds):
a tombstone's purge_time is its deletion plus it. Those that carry a cursor take the
store's epoch with it. What each element of a page takes once encoded is computed in
sizes.py, which must follow every field filled here.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp

from zkplatform.domain import models
from zkplatform.domain.issuing import IssuedToken
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

if TYPE_CHECKING:
    from collections.abc import Iterable

    from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

    from zkplatform.domain.sync import ListedChanges
    from zkplatform.domain.token_management import TokenPage
    from zkplatform.domain.vault import ListedItems, ListedVaults


def timestamp(unix_seconds: int) -> Timestamp:
    return Timestamp(seconds=unix_seconds)


def item_to_proto(item: models.Item, message: vault_pb2.Item | None = None, *, retention: int) -> vault_pb2.Item:
    """The item as a message, filled in place when one is given (a field of the response); a
    tombstone with its purge time, `retention` seconds after its deletion."""
    # Field by field: assigning to a message in place is cheaper than building it from
    # keyword arguments, which copies every sub-message.
    message = vault_pb2.Item() if message is None else message
    message.item_id = item.item_id
    message.tenant_id = item.tenant_id
    message.vault_id = item.vault_id
    message.version = item.version
    message.kind = item.kind
    message.title_hash = item.title_hash
    message.updated_at.seconds = item.updated_at
    for key in item.wrapped_keys:
        message.wrapped_keys.add(recipient_id=key.recipient_id, wrap_alg=key.wrap_alg, wrapped_key=key.wrapped_key)
    message.deleted = item.deleted
    if item.deleted:
        message.purge_time.seconds = item.updated_at + retention
    if (payload := item.payload) is not None:
        target = message.encrypted_payload
        target.SetInParent()  # present even if every field were empty, as the item has a payload
        target.alg = payload.alg
        target.nonce = payload.nonce
        target.aad = payload.aad
        target.ciphertext = payload.ciphertext
        target.version = payload.version
        target.commitment = payload.commitment
        target.signer = payload.signer
        target.signature = payload.signature
    return message


def item_from_proto(message: vault_pb2.Item) -> models.Item:
    payload = None
    if message.HasField("encrypted_payload"):
        p = message.encrypted_payload
        payload = _payload(p)
    return models.Item(
        item_id=message.item_id,
        tenant_id=message.tenant_id,
        vault_id=message.vault_id,
        version=message.version,
        kind=message.kind,
        title_hash=message.title_hash,
        updated_at=message.updated_at.seconds,
        payload=payload,
        wrapped_keys=tuple(models.WrappedKey(k.recipient_id, k.wrap_alg, k.wrapped_key) for k in message.wrapped_keys),
        deleted=message.deleted,
    )


def item_content(request: vault_pb2.CreateItemRequest) -> models.ItemContent:
    """What a create writes; the wrapped keys keep the client's order."""
    return models.ItemContent(
        kind=request.kind,
        title_hash=request.title_hash,
        payload=_payload(request.encrypted_payload),
        wrapped_keys=_keys(request.wrapped_keys),
    )


# The fields an UpdateItem may write, by proto name (the update mask's paths), and their JSON names.
UPDATABLE = {
    "kind": "kind",
    "title_hash": "titleHash",
    "encrypted_payload": "encryptedPayload",
    "wrapped_keys": "wrappedKeys",
}


def updated_fields(request: vault_pb2.UpdateItemRequest) -> frozenset[str]:
    """The fields the update writes: those its mask names, or all of them when it names none."""
    return frozenset(request.update_mask.paths) or frozenset(UPDATABLE)


def item_patch(request: vault_pb2.UpdateItemRequest) -> models.ItemPatch:
    """What an update writes: the fields its mask names (all when it names none), and no other,
    whatever the request holds for them."""
    fields = updated_fields(request)
    return models.ItemPatch(
        kind=request.kind if "kind" in fields else None,
        title_hash=request.title_hash if "title_hash" in fields else None,
        payload=_payload(request.encrypted_payload) if "encrypted_payload" in fields else None,
        wrapped_keys=_keys(request.wrapped_keys) if "wrapped_keys" in fields else None,
    )


def _payload(p: vault_pb2.EncryptedPayload) -> models.EncryptedPayload:
    return models.EncryptedPayload(p.alg, p.nonce, p.aad, p.ciphertext, p.version, p.commitment, p.signer, p.signature)


def _keys(keys: Iterable[vault_pb2.WrappedKey]) -> tuple[models.WrappedKey, ...]:
    return tuple(models.WrappedKey(k.recipient_id, k.wrap_alg, k.wrapped_key) for k in keys)


_ChangeResponse = TypeVar(
    "_ChangeResponse", vault_pb2.CreateItemResponse, vault_pb2.UpdateItemResponse, vault_pb2.DeleteItemResponse
)


def _cursor(cursor: vault_pb2.Cursor, vault_id: str, sequence: int, epoch: str) -> None:
    cursor.vault_id = vault_id
    cursor.sequence = sequence
    cursor.epoch = epoch


def change_response(
    change: models.ItemChange, epoch: str, response: _ChangeResponse, *, retention: int
) -> _ChangeResponse:
    """A create's, an update's or a delete's response: the item and the cursor of its change
    (in the store's `epoch`), filled in place."""
    item_to_proto(change.item, response.item, retention=retention)
    _cursor(response.cursor, change.item.vault_id, change.sequence, epoch)
    return response


def delete_response(tombstone: models.Tombstone, epoch: str, *, retention: int) -> vault_pb2.DeleteItemResponse:
    return change_response(tombstone, epoch, vault_pb2.DeleteItemResponse(), retention=retention)


def get_response(item: models.Item, *, retention: int) -> vault_pb2.GetItemResponse:
    response = vault_pb2.GetItemResponse()
    item_to_proto(item, response.item, retention=retention)
    return response


def list_response(vault_id: str, listed: ListedItems, *, retention: int) -> vault_pb2.ListItemsResponse:
    response = vault_pb2.ListItemsResponse(next_page_token=listed.next_page_token)
    add = response.items.add
    for item in listed.items:
        item_to_proto(item, add(), retention=retention)
    _cursor(response.cursor, vault_id, listed.sequence, listed.epoch)
    return response


def _add_changes(
    changes: RepeatedCompositeFieldContainer[vault_pb2.ItemChange], listed: ListedChanges, retention: int
) -> None:
    for change in listed.changes:
        message = changes.add()
        item_to_proto(change.item, message.item, retention=retention)
        message.sequence = change.sequence


def changes_response(vault_id: str, listed: ListedChanges, *, retention: int) -> vault_pb2.ListChangesResponse:
    response = vault_pb2.ListChangesResponse(has_more=listed.has_more)
    _add_changes(response.changes, listed, retention)
    _cursor(response.cursor, vault_id, listed.cursor, listed.epoch)
    return response


def watch_message(vault_id: str, listed: ListedChanges, *, retention: int) -> vault_pb2.WatchChangesResponse:
    """One message of a watch: a page of changes, or a heartbeat (none), with where to resume,
    and whether it ends the backlog."""
    response = vault_pb2.WatchChangesResponse(caught_up=listed.caught_up)
    _add_changes(response.changes, listed, retention)
    _cursor(response.cursor, vault_id, listed.cursor, listed.epoch)
    return response


class WatchMessages:
    """watch_message, remembering the last one made: the watches of a vault woken by one change
    send equal pages (the page they share, domain/shared_reads.py), so it is converted once, and,
    being the same message, encoded once per codec (rpc/encoding/last_encoded.py). A message
    handed out is never changed afterwards."""

    def __init__(self, retention: int) -> None:
        self._retention = retention
        self._last: tuple[str, ListedChanges, vault_pb2.WatchChangesResponse] | None = None

    def message(self, vault_id: str, listed: ListedChanges) -> vault_pb2.WatchChangesResponse:
        last = self._last
        if last is not None and last[0] == vault_id and last[1] == listed:
            return last[2]
        message = watch_message(vault_id, listed, retention=self._retention)
        self._last = (vault_id, listed, message)
        return message


def vault_to_proto(vault: models.Vault, message: vault_pb2.Vault | None = None) -> vault_pb2.Vault:
    """The vault with its members, sorted; filled in place when a message is given."""
    message = vault_pb2.Vault() if message is None else message
    message.vault_id = vault.vault_id
    message.tenant_id = vault.tenant_id
    message.members.extend(sorted(vault.members))
    return message


def vaults_response(listed: ListedVaults) -> vault_pb2.ListVaultsResponse:
    response = vault_pb2.ListVaultsResponse(next_page_token=listed.next_page_token)
    add = response.vaults.add
    for vault in listed.vaults:
        vault_to_proto(vault, add())
    return response


def vault_response(vault: models.Vault) -> vault_pb2.GetVaultResponse:
    response = vault_pb2.GetVaultResponse()
    vault_to_proto(vault, response.vault)
    return response


_ROLES = {
    models.Role.OWNER: broker_pb2.ROLE_OWNER,
    models.Role.ADMIN: broker_pb2.ROLE_ADMIN,
    models.Role.MEMBER: broker_pb2.ROLE_MEMBER,
    models.Role.SERVICE: broker_pb2.ROLE_SERVICE,
}


@functools.lru_cache(maxsize=256)
def _ordered(scopes: frozenset[models.Scope]) -> tuple[models.Scope, ...]:
    # Tokens hold one of a handful of scope sets: a page of tokens sorts each set once.
    return tuple(sorted(scopes))


def _token_fields(
    record: models.TokenRecord, role: models.Role, message: broker_pb2.Token | broker_pb2.TokenInfo
) -> None:
    """The fields a Token and a TokenInfo share, in place."""
    message.token_id = record.token_id
    message.tenant_id = record.tenant_id
    message.principal_id = record.principal_id
    message.scopes.extend(_ordered(record.scopes))
    message.role = _ROLES[role]
    message.pop_key_id = record.pop_key_id
    message.issued_at.seconds = record.issued_at
    message.expires_at.seconds = record.expires_at


def token_to_proto(issued: IssuedToken, role: models.Role, message: broker_pb2.Token | None = None) -> broker_pb2.Token:
    """A token just issued, its secret with it; filled in place when a message is given."""
    message = broker_pb2.Token() if message is None else message
    message.access_token = issued.secret
    _token_fields(issued.record, role, message)
    return message


def token_info_to_proto(
    record: models.TokenRecord, role: models.Role, message: broker_pb2.TokenInfo | None = None
) -> broker_pb2.TokenInfo:
    """What is shown of a token after it was issued: never its secret, nor its hash.
    Filled in place when a message is given (an element of a page): see item_to_proto."""
    message = broker_pb2.TokenInfo() if message is None else message
    _token_fields(record, role, message)
    message.parent_token_id = record.parent_token_id
    message.origin = broker_pb2.TOKEN_ORIGIN_MINTED if record.minted else broker_pb2.TOKEN_ORIGIN_OPERATOR
    if record.last_used_at is not None:
        message.last_used_at.seconds = record.last_used_at
    return message


def tokens_response(page: TokenPage) -> broker_pb2.ListTokensResponse:
    """A page of ListTokens, each token filled in place rather than built and copied in."""
    response = broker_pb2.ListTokensResponse(next_page_token=page.next_page_token)
    add = response.tokens.add
    for listed in page.tokens:
        token_info_to_proto(listed.record, listed.role, add())
    return response
