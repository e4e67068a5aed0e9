"""The Python package's KeyDirectory against a real `zkplatform serve --dev` (its development log
key and in-process witness): bob's phone endorses his laptop and alice's client verifies it, then
sees it revoked; a device another of bob's devices adds alerts his phone, and a first-device
statement while bob has a device is refused by the server; after an owner's reset, alice's client
will not seal for bob's new device until the application acknowledges the reset, and bob's old
device is told. Each test has a server of its own: they change bob's devices."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from connectrpc.errors import ConnectError

from tests.clients.conftest import dev_device, dev_policy, dev_principals, verified_until
from tests.e2e.server import Server, serving
from zkplatform_api.platform.v1.directory_pb2 import PublishDeviceRequest, ResetPrincipalRequest
from zkplatform_api.platform.v1.vault_pb2 import Item
from zkplatform_client import (
    Alert,
    DeviceKeyPair,
    FileKeyLogStore,
    KeyDirectory,
    KeyLogError,
    Me,
    SealContext,
    clients,
    error_reason,
    open_item,
    seal,
)
from zkplatform_tlog.statements import b64url

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with serving(tmp_path, "--dev") as server:
        yield server


@pytest.fixture
def credentials(server: Server) -> Path:
    return server.log_path.parent / "var" / "dev-credentials.json"


def directory(
    platform: Any, credentials: Path, store: Path, principal_id: str, device: DeviceKeyPair, told: list[Alert]
) -> KeyDirectory:
    return KeyDirectory(
        platform.directory,
        "acme",
        dev_policy(credentials),
        FileKeyLogStore(store),
        me=Me(principal_id),
        device=device,
        on_alert=told.append,
    )


def live_keys(state: Any, principal_id: str) -> list[str]:
    return [device.agreement_key_id for device in state.live_devices(principal_id)]


async def test_a_device_bob_s_phone_endorses_is_verified_by_alice_then_revoked(
    server: Server, credentials: Path, tmp_path: Path
) -> None:
    principals = dev_principals(credentials)
    phone, laptop = dev_device(principals["bob"]), DeviceKeyPair.generate("P-256")
    bob_told: list[Alert] = []
    alice_told: list[Alert] = []
    async with (
        clients(server.base_url, token=principals["bob"]["token"]) as bob,
        clients(server.base_url, token=principals["alice"]["token"]) as alice,
    ):
        bobs = directory(bob, credentials, tmp_path / "bob.json", "bob", phone, bob_told)
        alice_device = dev_device(principals["alice"])
        alices = directory(alice, credentials, tmp_path / "alice.json", "alice", alice_device, alice_told)
        before = await alices.recipient_keys(["bob"])

        published = await bobs.add_device(laptop.device_statement("acme", "bob", endorser=phone.device_id), phone)
        with_laptop = await verified_until(alices, lambda s: laptop.device_id in s.devices)
        found = await alices.recipient_keys(["bob"])
        await bobs.revoke_device(laptop.device_id, phone)
        without = await verified_until(alices, lambda s: not s.devices[laptop.device_id].live)
        after = await alices.recipient_keys(["bob"])
        await verified_until(bobs, lambda s: s.size == without.size)

    assert [key.key_id for key in before["bob"]] == [phone.agreement_key_id]
    assert published.endorser_device_id == phone.device_id
    assert live_keys(with_laptop, "bob") == [phone.agreement_key_id, laptop.agreement_key_id]
    assert [key.key_id for key in found["bob"]] == [phone.agreement_key_id, laptop.agreement_key_id]
    assert [key.key_id for key in after["bob"]] == [phone.agreement_key_id]
    assert bob_told == []  # the phone made every change itself
    assert alice_told == []


async def test_a_device_added_by_another_of_bob_s_devices_alerts_his_phone(
    server: Server, credentials: Path, tmp_path: Path
) -> None:
    principals = dev_principals(credentials)
    phone, laptop, tablet = dev_device(principals["bob"]), DeviceKeyPair.generate(), DeviceKeyPair.generate()
    phone_told: list[Alert] = []
    async with clients(server.base_url, token=principals["bob"]["token"]) as bob:
        phones = directory(bob, credentials, tmp_path / "phone.json", "bob", phone, phone_told)
        await phones.add_device(laptop.device_statement("acme", "bob", endorser=phone.device_id), phone)
        laptops = directory(bob, credentials, tmp_path / "laptop.json", "bob", laptop, [])
        await laptops.add_device(tablet.device_statement("acme", "bob", endorser=laptop.device_id), laptop)
        state = await verified_until(phones, lambda s: tablet.device_id in s.devices)
        # A "first device" for bob, who has live devices, with his token: the server refuses it.
        intruder = DeviceKeyPair.generate().first_device_statement("acme", "bob")
        with pytest.raises(ConnectError) as refused:
            await bob.directory.publish_device(
                PublishDeviceRequest(statement=intruder.text, signature=b64url(intruder.signature))
            )
        again = await phones.verify()

    tablet_index = state.devices[tablet.device_id].index
    assert phone_told == [Alert(tablet_index, "DEVICE_ADDED", tablet.device_id)]
    assert await phones.alerts() == phone_told
    assert error_reason(refused.value) == "ENDORSEMENT_REQUIRED"
    assert again.size == state.size
    await phones.acknowledge_alert(tablet_index)
    assert await phones.alerts() == []


async def test_after_a_reset_alice_seals_for_bob_s_new_device_only_once_acknowledged(
    server: Server, credentials: Path, tmp_path: Path
) -> None:
    principals = dev_principals(credentials)
    phone, new_phone = dev_device(principals["bob"]), DeviceKeyPair.generate()
    old_told: list[Alert] = []
    alice_told: list[Alert] = []
    context = SealContext("acme", "acme-shared", "after-reset", "note")
    async with (
        clients(server.base_url, token=principals["bob"]["token"]) as bob,
        clients(server.base_url, token=principals["alice"]["token"]) as alice,
    ):
        alice_device = dev_device(principals["alice"])
        alices = directory(alice, credentials, tmp_path / "alice.json", "alice", alice_device, alice_told)
        olds = directory(bob, credentials, tmp_path / "old-phone.json", "bob", phone, old_told)
        await alices.verify()
        await olds.verify()

        reset = await alice.directory.reset_principal(ResetPrincipalRequest(principal_id="bob"))  # alice owns acme
        news = directory(bob, credentials, tmp_path / "new-phone.json", "bob", new_phone, [])
        await news.publish_first_device(new_phone)
        state = await verified_until(alices, lambda s: new_phone.device_id in s.devices)
        with pytest.raises(KeyLogError) as held:
            await alices.recipient_keys(["bob"])
        await alices.acknowledge_reset("bob", reset.entry.index)
        found = await alices.recipient_keys(["alice", "bob"])
        old_state = await verified_until(olds, lambda s: new_phone.device_id in s.devices)
        new_state = await news.verify()

    sealed = seal(b"after the reset", [key for keys in found.values() for key in keys], context, alice_device)
    item = Item(
        tenant_id="acme",
        vault_id="acme-shared",
        item_id="after-reset",
        kind="note",
        version=1,
        encrypted_payload=sealed.encrypted_payload,
        wrapped_keys=sealed.wrapped_keys,
    )
    new_index = state.devices[new_phone.device_id].index
    assert [(r.principal_id, r.index) for r in state.unacknowledged_resets] == [("bob", reset.entry.index)]
    assert held.value.reason == "RESET_UNACKNOWLEDGED"
    assert [key.key_id for key in found["bob"]] == [new_phone.agreement_key_id]
    assert open_item(item, new_phone.recipient_key(), new_state).plaintext == b"after the reset"
    assert not old_state.devices[phone.device_id].live
    assert old_told == [
        Alert(reset.entry.index, "PRINCIPAL_RESET", ""),
        Alert(new_index, "DEVICE_ADDED", new_phone.device_id),
    ]
    assert new_state.alerts == ()  # the new phone starts at the reset
    assert alice_told == []
