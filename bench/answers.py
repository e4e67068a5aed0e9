"""What the no-op Connect handler (bench/noop.py) answers: fixed messages of the shape and
size of the real app's answers to bench/calls.lua's calls on the data bench/seed.py seeds,
built by the real app's conversions. The no-op handler and the app then differ by the work
of a call, not by what goes over the wire.
"""

from __future__ import annotations

from dataclasses import replace

from bench.seed import NOW, OWNER, TENANT, TOKEN_TTL_SECONDS, bench_item
from zkplatform.domain.models import (
    ALL_SCOPES,
    EncryptedPayload,
    Item,
    ItemChange,
    Role,
    TokenRecord,
    Tombstone,
    WrappedKey,
)
from zkplatform.domain.paging import PageTokens, Position
from zkplatform.domain.sync import ListedChanges
from zkplatform.domain.vault import ListedItems
from zkplatform.messages.convert import (
    change_response,
    changes_response,
    delete_response,
    get_response,
    list_response,
    timestamp,
    token_info_to_proto,
)
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

PAGE = 100  # the page size of every listing the bench drives
VAULT_SIZE = 1000  # the one vault the reads of bench/plan.py's per-call-rpcs are served from
# Page tokens of the app's form and length: the key changes only their bytes.
_PAGES = PageTokens(b"bench-page-token-key-of-32-bytes")
_UNKNOWN_TOKEN_ID = "tok_" + "0" * 24
# An epoch of the stores' form (domain.models.new_epoch), and the default tombstone retention.
EPOCH = "5c0f7a1e9b3d4c2a8e6f0b1d3a5c7e9f"
RETENTION = 90 * 86_400


def _written(item_id: str, vault_id: str, version: int, ciphertext: str) -> Item:
    """An item as calls.lua's create and update write it (its content()), at `version`."""
    return Item(
        item_id=item_id,
        tenant_id=TENANT,
        vault_id=vault_id,
        version=version,
        kind="note",
        title_hash="dGl0bGUtaGFzaC10aXRsZS1oYXNo",
        updated_at=NOW,
        payload=EncryptedPayload("A256GCM", "bm9uY2Vub25jZQ", "YWFk", ciphertext, 1),
        wrapped_keys=(WrappedKey(OWNER, "A256KW", "a2V5LWtleS1rZXkta2V5LWtleS1rZXk"),),
    )


DELETED = delete_response(Tombstone(bench_item(1, 1).tombstone(NOW), 2), EPOCH, retention=RETENTION)
# Ids and cursors as long as the loads' on the writes' server: its 160 vaults of 1,000 items (b-n in
# v-(n % 160)), each a few hundred changes past its seeding.
CREATED = change_response(
    ItemChange(_written("c1-0-1000", "v-57", 1, "Y3JlYXRlZC1jcmVhdGVkLWNyZWF0ZWQ"), 1500),
    EPOCH,
    vault_pb2.CreateItemResponse(),
    retention=RETENTION,
)
UPDATED = change_response(
    ItemChange(_written("b-57057", "v-97", 2, "dXBkYXRlZC11cGRhdGVkLXVwZGF0ZWQ"), 1500),
    EPOCH,
    vault_pb2.UpdateItemResponse(),
    retention=RETENTION,
)
GOT = get_response(bench_item(507, 1), retention=RETENTION)


def _listed() -> vault_pb2.ListItemsResponse:
    """The first page of the vault: its items by item_id (b-0, b-1, b-10, b-100, ...)."""
    first = sorted(range(VAULT_SIZE), key=lambda n: f"b-{n}")[:PAGE]
    items = tuple(bench_item(n, 1) for n in first)
    next_page = _PAGES.issue(Position(VAULT_SIZE, items[-1].item_id, EPOCH), TENANT, "v-0", "live")
    return list_response("v-0", ListedItems(items, next_page, VAULT_SIZE, EPOCH), retention=RETENTION)


def _changes() -> vault_pb2.ListChangesResponse:
    """The vault's first changes: its items in the order they were seeded, one change each."""
    changes = tuple(ItemChange(bench_item(n, 1), n + 1) for n in range(PAGE))
    return changes_response("v-0", ListedChanges(changes, PAGE, has_more=True, epoch=EPOCH), retention=RETENTION)


def _tokens() -> broker_pb2.ListTokensResponse:
    """A page of the owner's tokens as the operator issued them: every scope, newest first."""
    ids = sorted((f"tok_{n:024x}" for n in range(1, PAGE + 1)), reverse=True)
    records = [TokenRecord(token_id, b"", TENANT, OWNER, ALL_SCOPES, NOW, NOW + TOKEN_TTL_SECONDS) for token_id in ids]
    # The token the loads present is listed too, and has been used.
    records[0] = replace(records[0], last_used_at=NOW)
    page = [token_info_to_proto(record, Role.OWNER) for record in records]
    next_page = _PAGES.issue(Position(NOW, ids[-1]), TENANT, OWNER)
    return broker_pb2.ListTokensResponse(tokens=page, next_page_token=next_page)


LISTED = _listed()
CHANGES = _changes()
TOKENS = _tokens()
REVOKED = broker_pb2.RevokeTokenResponse(revoked_token_ids=[_UNKNOWN_TOKEN_ID])
MINTED = broker_pb2.MintUserApiTokenResponse(
    token=broker_pb2.Token(
        access_token="zkp_" + "A" * 49,
        token_id=_UNKNOWN_TOKEN_ID,
        tenant_id=TENANT,
        principal_id="m-0",
        scopes=["vault.items.delete"],
        role=broker_pb2.ROLE_ADMIN,
        issued_at=timestamp(NOW),
        expires_at=timestamp(NOW + 300),
    )
)
