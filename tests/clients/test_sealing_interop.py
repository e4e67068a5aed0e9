"""The two client packages interoperate over a real server, in sealing version 2: what the npm
package seals the Python package opens and sees who sealed, and the reverse; a share made in one
language opens in the other, and an unshare made in one shuts the other out; for X25519 recipients
(the principals' demo devices), a P-256 one (a laptop of bob's that his phone endorsed, its keys
handed to the TypeScript side as a key file under a passphrase) and an X-Wing one (a tablet of
carol's, in globex, published over the server and handed over likewise). The TypeScript side is
tests/e2e/clients/sealing_interop.ts, from the npm tarball installed as a consumer would.

Its command line, which both files follow (one JSON line each):

    node sealing_interop.js seal CREDENTIALS PRINCIPAL VAULT ITEM TEXT [FOR]
        seal TEXT for every live device of FOR (principal ids, comma-separated; alice and bob
        unless given) in the verified log, signed by the principal's demo device, and create
        ITEM: {"created": "1", "recipients": N}
    node sealing_interop.js open CREDENTIALS PRINCIPAL VAULT ITEM [KEY_FILE]
        open ITEM with the demo device's key, or the key file's (its passphrase in the
        environment's KEY_FILE_PASSPHRASE), against the verified log:
        {"opened": TEXT, "sealedBy": {"principalId": P, "deviceId": D, "live": B}} or
        {"refused": REASON}
    node sealing_interop.js share CREDENTIALS PRINCIPAL VAULT ITEM WITH
        share ITEM with WITH's live devices, signed again by the demo device (update_mask
        encrypted_payload,wrapped_keys): {"version": V, "wrappedKeys": N}
    node sealing_interop.js unshare CREDENTIALS PRINCIPAL VAULT ITEM KEEP
        seal ITEM again for the live devices of KEEP (principal ids, comma-separated) only:
        {"version": V, "wrappedKeys": N}
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from tests.clients.conftest import dev_device, dev_policy, dev_principals, verified_until
from tests.e2e.server import Server
from tests.e2e.test_client_packages import packages, project, run  # noqa: F401 # fixtures
from zkplatform_api.platform.v1.vault_pb2 import CreateItemRequest, GetItemRequest, UpdateItemRequest
from zkplatform_client import (
    DeviceKeyPair,
    KeyDirectory,
    Me,
    MemoryKeyLogStore,
    RecipientKey,
    SealContext,
    Sealed,
    SealingError,
    clients,
    open_item,
    seal,
    share,
    unshare,
)
from zkplatform_client.devices import AgreementCurve

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)

VAULT = "acme-shared"
PASSPHRASE = "the interop test's passphrase"  # a test key, public by being here


def principal(credentials: Path, principal_id: str) -> dict[str, Any]:
    return dev_principals(credentials)[principal_id]


def node(project: Path, *args: str, key_file: Path | None = None) -> dict[str, Any]:  # noqa: F811
    command = ["node", str(project / "out" / "sealing_interop.js"), *args]
    if key_file is None:
        result = run(command, project)
    else:
        os.environ["KEY_FILE_PASSPHRASE"] = PASSPHRASE  # run() passes the environment on
        try:
            result = run([*command, str(key_file)], project)
        finally:
            del os.environ["KEY_FILE_PASSPHRASE"]
    assert result.stderr == ""
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def directory_of(platform: Any, credentials: Path, me: dict[str, Any], device: DeviceKeyPair) -> KeyDirectory:
    """The log `me`'s device verifies (in memory: each call is a new client of this module's server)."""
    return KeyDirectory(
        platform.directory, me["tenantId"], dev_policy(credentials), MemoryKeyLogStore(), me=Me(me["principalId"]),
        device=device,
    )  # fmt: skip


async def verified_keys(platform: Any, credentials: Path, me: dict[str, Any], asked: list[str]) -> list[RecipientKey]:
    directory = directory_of(platform, credentials, me, dev_device(me))
    return [key for keys in (await directory.recipient_keys(asked)).values() for key in keys]


@pytest.fixture(scope="module")
def laptop(dev_server: Server, dev_credentials: Path) -> tuple[DeviceKeyPair, Path]:
    """bob's P-256 laptop, endorsed by his demo phone, and its key file beside the credentials."""
    bob = principal(dev_credentials, "bob")
    return asyncio.run(new_device(dev_server, dev_credentials, bob, "P-256", "bob-laptop.jwe"))


async def new_device(
    dev_server: Server, dev_credentials: Path, me: dict[str, Any], agreement: AgreementCurve, file_name: str
) -> tuple[DeviceKeyPair, Path]:
    """A new device of `me`'s, endorsed by its demo device, and its key file beside the credentials."""
    keys, demo = DeviceKeyPair.generate(agreement), dev_device(me)
    tenant_id, principal_id = me["tenantId"], me["principalId"]
    async with clients(dev_server.base_url, token=me["token"]) as platform:
        directory = directory_of(platform, dev_credentials, me, demo)
        await directory.add_device(keys.device_statement(tenant_id, principal_id, endorser=demo.device_id), demo)
        await verified_until(directory, lambda state: keys.device_id in state.devices)
    key_file = dev_credentials.parent / file_name
    key_file.write_text(keys.to_key_file(PASSPHRASE, tenant_id=tenant_id, principal_id=principal_id))
    return keys, key_file


async def python_seal(
    server: Server,
    credentials: Path,
    principal_id: str,
    item_id: str,
    text: str,
    *,
    vault: str = VAULT,
    sealed_for: tuple[str, ...] = ("alice", "bob"),
) -> Sealed:
    me = principal(credentials, principal_id)
    async with clients(server.base_url, token=me["token"]) as platform:
        recipients = await verified_keys(platform, credentials, me, list(sealed_for))
        sealed = seal(text.encode(), recipients, SealContext(me["tenantId"], vault, item_id, "note"), dev_device(me))
        request = CreateItemRequest(
            vault_id=vault,
            item_id=item_id,
            kind="note",
            encrypted_payload=sealed.encrypted_payload,
            wrapped_keys=sealed.wrapped_keys,
        )
        await platform.vault.create_item(request)
        return sealed


async def python_open(
    server: Server,
    credentials: Path,
    principal_id: str,
    item_id: str,
    device: DeviceKeyPair | None = None,
    *,
    vault: str = VAULT,
) -> dict[str, Any]:
    """What the TypeScript side reports for `open`, from the Python package."""
    me = principal(credentials, principal_id)
    device = device or dev_device(me)
    async with clients(server.base_url, token=me["token"]) as platform:
        item = (await platform.vault.get_item(GetItemRequest(vault_id=vault, item_id=item_id))).item
        state = await directory_of(platform, credentials, me, device).verify()
    try:
        opened = open_item(item, device.recipient_key(), state)
    except SealingError as error:
        return {"refused": error.reason}
    assert opened.sealed_by is not None
    by = opened.sealed_by
    return {"opened": opened.plaintext.decode(), "sealedBy": {"principalId": by.principal_id,
                                                              "deviceId": by.device_id, "live": by.live}}  # fmt: skip


async def python_update(
    server: Server, credentials: Path, principal_id: str, item_id: str, change: str, principal_ids: list[str]
) -> dict[str, Any]:
    """A share (or an unshare) from the Python package, as the TypeScript side reports one."""
    me = principal(credentials, principal_id)
    device = dev_device(me)
    async with clients(server.base_url, token=me["token"]) as platform:
        item = (await platform.vault.get_item(GetItemRequest(vault_id=VAULT, item_id=item_id))).item
        state = await directory_of(platform, credentials, me, device).verify()
        recipients = await verified_keys(platform, credentials, me, principal_ids)
        verb = share if change == "share" else unshare
        sealed = verb(item, device.recipient_key(), recipients, device, state)
        updated = await platform.vault.update_item(
            UpdateItemRequest(
                vault_id=VAULT,
                item_id=item_id,
                base_version=item.version,
                encrypted_payload=sealed.encrypted_payload,
                wrapped_keys=sealed.wrapped_keys,
                update_mask=FieldMask(paths=["encrypted_payload", "wrapped_keys"]),
            )
        )
    return {"version": str(updated.item.version), "wrappedKeys": len(sealed.wrapped_keys)}


def signed_by(credentials: Path, principal_id: str) -> dict[str, Any]:
    return {"principalId": principal_id, "deviceId": principal(credentials, principal_id)["deviceId"], "live": True}


async def test_typescript_seals_python_opens_on_both_key_types(
    dev_server: Server,
    dev_credentials: Path,
    project: Path,  # noqa: F811
    laptop: tuple[DeviceKeyPair, Path],
) -> None:
    keys, _ = laptop
    sealed = node(project, "seal", str(dev_credentials), "alice", VAULT, "from-ts", "sealed in TypeScript")

    by_bob = await python_open(dev_server, dev_credentials, "bob", "from-ts")
    by_laptop = await python_open(dev_server, dev_credentials, "bob", "from-ts", keys)
    by_alice = await python_open(dev_server, dev_credentials, "alice", "from-ts")

    assert sealed == {"created": "1", "recipients": 3}  # alice's device, bob's phone and laptop
    expected = {"opened": "sealed in TypeScript", "sealedBy": signed_by(dev_credentials, "alice")}
    assert by_bob == by_laptop == by_alice == expected


async def test_python_seals_typescript_opens_on_both_key_types(
    dev_server: Server,
    dev_credentials: Path,
    project: Path,  # noqa: F811
    laptop: tuple[DeviceKeyPair, Path],
) -> None:
    _, key_file = laptop
    sealed = await python_seal(dev_server, dev_credentials, "bob", "from-py", "sealed in Python")

    by_alice = node(project, "open", str(dev_credentials), "alice", VAULT, "from-py")
    by_bob = node(project, "open", str(dev_credentials), "bob", VAULT, "from-py")
    by_laptop = node(project, "open", str(dev_credentials), "bob", VAULT, "from-py", key_file=key_file)

    assert {k.wrap_alg for k in sealed.wrapped_keys} == {
        "HPKE-Base-X25519-SHA256-A256GCM",
        "HPKE-Base-P256-SHA256-A256GCM",
    }
    expected = {"opened": "sealed in Python", "sealedBy": signed_by(dev_credentials, "bob")}
    assert by_alice == by_bob == by_laptop == expected


async def test_an_unshare_in_python_and_a_share_in_typescript_hold_across(
    dev_server: Server,
    dev_credentials: Path,
    project: Path,  # noqa: F811
    laptop: tuple[DeviceKeyPair, Path],
) -> None:
    keys, key_file = laptop
    node(project, "seal", str(dev_credentials), "alice", VAULT, "shared-across", "the door code is 4711")

    unshared = await python_update(dev_server, dev_credentials, "alice", "shared-across", "unshare", ["alice"])
    shut_out = node(project, "open", str(dev_credentials), "bob", VAULT, "shared-across", key_file=key_file)
    shared = node(project, "share", str(dev_credentials), "alice", VAULT, "shared-across", "bob")
    back_in = await python_open(dev_server, dev_credentials, "bob", "shared-across", keys)

    assert unshared == {"version": "2", "wrappedKeys": 1}
    assert shut_out == {"refused": "NOT_A_RECIPIENT"}
    assert shared == {"version": "3", "wrappedKeys": 3}
    assert back_in == {"opened": "the door code is 4711", "sealedBy": signed_by(dev_credentials, "alice")}


async def test_an_unshare_in_typescript_and_a_share_in_python_hold_across(
    dev_server: Server,
    dev_credentials: Path,
    project: Path,  # noqa: F811
    laptop: tuple[DeviceKeyPair, Path],
) -> None:
    _, key_file = laptop
    await python_seal(dev_server, dev_credentials, "bob", "unshared-across", "the printer is on floor 2")

    unshared = node(project, "unshare", str(dev_credentials), "bob", VAULT, "unshared-across", "bob")
    shut_out = await python_open(dev_server, dev_credentials, "alice", "unshared-across")
    shared = await python_update(dev_server, dev_credentials, "bob", "unshared-across", "share", ["alice"])
    back_in = node(project, "open", str(dev_credentials), "alice", VAULT, "unshared-across")
    laptop_too = node(project, "open", str(dev_credentials), "bob", VAULT, "unshared-across", key_file=key_file)

    assert unshared == {"version": "2", "wrappedKeys": 2}  # bob's phone and laptop
    assert shut_out == {"refused": "NOT_A_RECIPIENT"}
    assert shared == {"version": "3", "wrappedKeys": 3}
    expected = {"opened": "the printer is on floor 2", "sealedBy": signed_by(dev_credentials, "bob")}
    assert back_in == laptop_too == expected


async def test_an_x_wing_device_is_published_and_sealed_for_across(
    dev_server: Server,
    dev_credentials: Path,
    project: Path,  # noqa: F811
) -> None:
    """carol's X-Wing tablet, endorsed by her demo device (X25519) and published over the server:
    an item sealed before it joined is shared with it in TypeScript, and opens with it in Python;
    what TypeScript seals for carol opens with it in Python, and what Python seals opens with it
    in TypeScript, from its key file. Every wrapped key for it is HPKE-Base-XWing-SHA256-A256GCM."""
    vault, carol = "globex-main", principal(dev_credentials, "carol")
    before = await python_seal(dev_server, dev_credentials, "carol", "xwing-later", "sealed before the tablet",
                               vault=vault, sealed_for=("carol",))  # fmt: skip
    tablet, key_file = await new_device(dev_server, dev_credentials, carol, "X-Wing", "carol-tablet.jwe")

    shared = node(project, "share", str(dev_credentials), "carol", vault, "xwing-later", "carol")
    later = await python_open(dev_server, dev_credentials, "carol", "xwing-later", tablet, vault=vault)
    from_ts = node(project, "seal", str(dev_credentials), "carol", vault, "xwing-from-ts", "sealed in TypeScript",
                   "carol")  # fmt: skip
    by_tablet = await python_open(dev_server, dev_credentials, "carol", "xwing-from-ts", tablet, vault=vault)
    from_py = await python_seal(dev_server, dev_credentials, "carol", "xwing-from-py", "sealed in Python",
                                vault=vault, sealed_for=("carol",))  # fmt: skip
    by_key_file = node(project, "open", str(dev_credentials), "carol", vault, "xwing-from-py", key_file=key_file)

    assert json.loads(tablet.agreement_jwk)["alg"] == "X-Wing"
    assert len(before.wrapped_keys) == 1  # carol's demo device alone
    assert shared == {"version": "2", "wrappedKeys": 2}
    assert from_ts == {"created": "1", "recipients": 2}
    assert {k.wrap_alg for k in from_py.wrapped_keys} == {"HPKE-Base-X25519-SHA256-A256GCM",
                                                          "HPKE-Base-XWing-SHA256-A256GCM"}  # fmt: skip
    signed = signed_by(dev_credentials, "carol")
    assert later == {"opened": "sealed before the tablet", "sealedBy": signed}
    assert by_tablet == {"opened": "sealed in TypeScript", "sealedBy": signed}
    assert by_key_file == {"opened": "sealed in Python", "sealedBy": signed}
