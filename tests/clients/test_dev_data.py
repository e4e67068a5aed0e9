"""The development data set is really sealed, in version 2: against `zkplatform serve --dev`, every
item opens with the demo device key of each member of its vault and with no other, against the key
log that member verified, which says who sealed it (the demo device of the vault's first member);
its wrapped keys are for the agreement keys of devices that log holds (those of the vault's
members). tests/clients/test_walk_through.py runs the README's sealed demo."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import dev_device, dev_policy, dev_principals
from tests.e2e.server import Server, serving
from zkplatform_api.platform.v1.vault_pb2 import GetItemRequest, Item, ListItemsRequest, UpdateItemRequest
from zkplatform_client import (
    KeyDirectory,
    KeyLogState,
    Me,
    MemoryKeyLogStore,
    RecipientPrivateKey,
    SealedBy,
    SealingError,
    clients,
    open_item,
)

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = {"acme-private": ["alice"], "acme-shared": ["alice", "bob", "dave"], "globex-main": ["carol"]}


@pytest.fixture(scope="module")
def principals(dev_credentials: Path) -> dict[str, dict[str, Any]]:
    return dev_principals(dev_credentials)


async def verified_state(base_url: str, credentials: Path, member: dict[str, Any]) -> KeyLogState:
    """The tenant's key log as the member's demo device verifies it."""
    async with clients(base_url, token=member["token"]) as platform:
        directory = KeyDirectory(
            platform.directory,
            member["tenantId"],
            dev_policy(credentials),
            MemoryKeyLogStore(),
            me=Me(member["principalId"]),
            device=dev_device(member),
        )
        return await directory.verify()


async def test_every_item_opens_for_its_vaults_members_only_and_says_who_sealed_it(
    dev_server: Server, dev_credentials: Path, principals: dict[str, Any]
) -> None:
    keys = {name: dev_device(p).recipient_key() for name, p in principals.items()}
    states = {name: await verified_state(dev_server.base_url, dev_credentials, p) for name, p in principals.items()}
    opened: dict[str, list[str]] = {}
    sealed_by: dict[str, set[SealedBy | None]] = {}
    refused: dict[str, set[str]] = {}
    for vault_id, members in MEMBERS.items():
        member = principals[members[0]]
        async with clients(dev_server.base_url, token=member["token"]) as platform:
            items = (await platform.vault.list_items(ListItemsRequest(vault_id=vault_id))).items
        logged = {d.agreement_key_id: d.principal_id for d in states[members[0]].devices.values() if d.live}
        for item in items:
            for name, key in keys.items():
                try:
                    result = open_item(item, key, states[name])
                except SealingError as error:
                    refused.setdefault(f"{vault_id}/{name}", set()).add(error.reason)
                else:
                    assert json.loads(result.plaintext)["title"]
                    assert result.format_version == 2
                    opened.setdefault(vault_id, []).append(name)
                    sealed_by.setdefault(vault_id, set()).add(result.sealed_by)
            recipients = {k.recipient_id for k in item.wrapped_keys}
            sealed_for = {principal for key_id, principal in logged.items() if _hex(key_id) in recipients}
            assert sealed_for == set(members)
            assert len(item.wrapped_keys) == len(members)

    assert {vault: sorted(set(names)) for vault, names in opened.items()} == MEMBERS
    assert {vault: len(names) for vault, names in opened.items()} == {v: 6 * len(m) for v, m in MEMBERS.items()}
    assert sealed_by == {
        vault: {SealedBy(members[0], principals[members[0]]["deviceId"], live=True)}
        for vault, members in MEMBERS.items()
    }
    # carol's tenant's log does not hold alice's device: were she a recipient, SIGNER_UNKNOWN.
    assert refused == {
        "acme-private/bob": {"NOT_A_RECIPIENT"},
        "acme-private/dave": {"NOT_A_RECIPIENT"},
        "acme-private/carol": {"SIGNER_UNKNOWN"},
        "acme-shared/carol": {"SIGNER_UNKNOWN"},
        "globex-main/alice": {"SIGNER_UNKNOWN"},
        "globex-main/bob": {"SIGNER_UNKNOWN"},
        "globex-main/dave": {"SIGNER_UNKNOWN"},
    }


def test_the_credentials_name_the_published_devices(principals: dict[str, Any]) -> None:
    for principal in principals.values():
        device = dev_device(principal)
        assert device.device_id == principal["deviceId"]
        assert device.agreement_key_id == principal["keyId"]
        assert RecipientPrivateKey.from_jwk(principal["privateKeyJwk"]).key_id == principal["keyId"]


def _hex(key_id: str) -> str:
    """A key id (base64url) as a wrapped key's recipient_id names it (hex)."""
    return base64.urlsafe_b64decode(key_id + "=").hex()


async def test_a_ciphertext_moved_to_another_item_or_vault_does_not_open(tmp_path: Path) -> None:
    """What a server that moves stored bytes would serve: alice's own writes put item-1's sealed
    content of acme-shared under another item id and in another vault; bob and alice, who
    can open item-1 itself, open neither copy."""
    with serving(tmp_path, "--dev") as server:  # its own: the items it changes are the data set's
        principals = dev_principals(server.log_path.parent / "var" / "dev-credentials.json")
        copies, original = await _move(server.base_url, principals["alice"]["token"])
        credentials = server.log_path.parent / "var" / "dev-credentials.json"
        states = {
            name: await verified_state(server.base_url, credentials, principals[name]) for name in ("alice", "bob")
        }
    alice_key = RecipientPrivateKey.from_jwk(principals["alice"]["privateKeyJwk"])
    bob_key = RecipientPrivateKey.from_jwk(principals["bob"]["privateKeyJwk"])

    outcomes = []
    for copy in copies:
        for name, key in (("alice", alice_key), ("bob", bob_key)):
            with pytest.raises(SealingError) as refused:
                open_item(copy, key, states[name])
            outcomes.append(refused.value.reason)

    assert json.loads(open_item(original, bob_key, states["bob"]).plaintext)["title"]  # the original opens
    assert outcomes == ["BINDING_MISMATCH"] * 4


async def _move(base_url: str, token: str) -> tuple[list[Item], Item]:
    """acme-shared's item-1 content written over acme-shared's item-3 and acme-private's item-1."""
    async with clients(base_url, token=token) as platform:
        original = (await platform.vault.get_item(GetItemRequest(vault_id="acme-shared", item_id="item-1"))).item
        moved = [("acme-shared", "item-3"), ("acme-private", "item-1")]
        for vault_id, item_id in moved:
            current = (await platform.vault.get_item(GetItemRequest(vault_id=vault_id, item_id=item_id))).item
            await platform.vault.update_item(
                UpdateItemRequest(
                    vault_id=vault_id,
                    item_id=item_id,
                    base_version=current.version,
                    kind=original.kind,
                    encrypted_payload=original.encrypted_payload,
                    wrapped_keys=original.wrapped_keys,
                )
            )
        copies = [(await platform.vault.get_item(GetItemRequest(vault_id=v, item_id=i))).item for v, i in moved]
    return copies, original
