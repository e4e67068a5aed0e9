"""The two client packages interoperate over a real server: what the npm package seals the Python
package opens, and the reverse; a share made in one language opens in the other, and an unshare
made in one shuts the other out. Each side is a principal of the development data set with its
demo device from the credentials file, and verifies the key log before it seals; the TypeScript side
is tests/e2e/clients/sealing_interop.ts, from the npm tarball installed as a consumer would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from tests.clients.conftest import dev_device, dev_policy, dev_principals
from tests.e2e.server import Server
from tests.e2e.test_client_packages import packages, project, run  # noqa: F401 # fixtures
from zkplatform_api.platform.v1.vault_pb2 import CreateItemRequest, GetItemRequest, UpdateItemRequest
from zkplatform_client import (
    KeyDirectory,
    Me,
    MemoryKeyLogStore,
    RecipientKey,
    RecipientPrivateKey,
    SealContext,
    SealingError,
    clients,
    open_item,
    seal,
    unshare,
)

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)

VAULT = "acme-shared"


def principal(credentials: Path, principal_id: str) -> dict[str, Any]:
    return dev_principals(credentials)[principal_id]


def node(project: Path, *args: str) -> dict[str, Any]:  # noqa: F811
    result = run(["node", str(project / "out" / "sealing_interop.js"), *args], project)
    assert result.stderr == ""
    report: dict[str, Any] = json.loads(result.stdout)
    return report


async def verified_keys(platform: Any, credentials: Path, me: dict[str, Any], asked: list[str]) -> list[RecipientKey]:
    """The agreement keys of the asked principals' live devices, from the log `me`'s demo device
    verified (in memory: each call is a new client of this module's server)."""
    directory = KeyDirectory(
        platform.directory,
        me["tenantId"],
        dev_policy(credentials),
        MemoryKeyLogStore(),
        me=Me(me["principalId"]),
        device=dev_device(me),
    )
    return [key for keys in (await directory.recipient_keys(asked)).values() for key in keys]


async def python_seal(server: Server, credentials: Path, principal_id: str, item_id: str, text: str) -> int:
    me = principal(credentials, principal_id)
    async with clients(server.base_url, token=me["token"]) as platform:
        recipients = await verified_keys(platform, credentials, me, ["alice", "bob"])
        sealed = seal(text.encode(), recipients, SealContext("acme", VAULT, item_id, "note"))
        request = CreateItemRequest(
            vault_id=VAULT,
            item_id=item_id,
            kind="note",
            encrypted_payload=sealed.encrypted_payload,
            wrapped_keys=sealed.wrapped_keys,
        )
        return (await platform.vault.create_item(request)).item.version


async def python_open(server: Server, credentials: Path, principal_id: str, item_id: str) -> str:
    me = principal(credentials, principal_id)
    async with clients(server.base_url, token=me["token"]) as platform:
        item = (await platform.vault.get_item(GetItemRequest(vault_id=VAULT, item_id=item_id))).item
    try:
        return open_item(item, RecipientPrivateKey.from_jwk(me["privateKeyJwk"])).decode()
    except SealingError as error:
        return error.reason


async def python_unshare(server: Server, credentials: Path, principal_id: str, item_id: str, keep: list[str]) -> None:
    me = principal(credentials, principal_id)
    async with clients(server.base_url, token=me["token"]) as platform:
        item = (await platform.vault.get_item(GetItemRequest(vault_id=VAULT, item_id=item_id))).item
        recipients = await verified_keys(platform, credentials, me, keep)
        sealed = unshare(item, RecipientPrivateKey.from_jwk(me["privateKeyJwk"]), recipients)
        await platform.vault.update_item(
            UpdateItemRequest(
                vault_id=VAULT,
                item_id=item_id,
                base_version=item.version,
                encrypted_payload=sealed.encrypted_payload,
                wrapped_keys=sealed.wrapped_keys,
                update_mask=FieldMask(paths=["encrypted_payload", "wrapped_keys"]),
            )
        )


async def test_typescript_seals_python_opens(dev_server: Server, dev_credentials: Path, project: Path) -> None:  # noqa: F811
    sealed = node(project, "seal", str(dev_credentials), "alice", VAULT, "from-ts", "sealed in TypeScript")

    by_bob = await python_open(dev_server, dev_credentials, "bob", "from-ts")
    by_alice = await python_open(dev_server, dev_credentials, "alice", "from-ts")

    assert sealed == {"created": "1", "recipients": 2}
    assert (by_bob, by_alice) == ("sealed in TypeScript", "sealed in TypeScript")


async def test_python_seals_typescript_opens(dev_server: Server, dev_credentials: Path, project: Path) -> None:  # noqa: F811
    version = await python_seal(dev_server, dev_credentials, "bob", "from-py", "sealed in Python")

    by_alice = node(project, "open", str(dev_credentials), "alice", VAULT, "from-py")
    by_bob = node(project, "open", str(dev_credentials), "bob", VAULT, "from-py")

    assert version == 1
    assert by_alice == by_bob == {"opened": "sealed in Python"}


async def test_an_unshare_in_python_and_a_share_in_typescript_hold_across(
    dev_server: Server,
    dev_credentials: Path,
    project: Path,  # noqa: F811
) -> None:
    node(project, "seal", str(dev_credentials), "alice", VAULT, "shared-across", "the door code is 4711")

    await python_unshare(dev_server, dev_credentials, "alice", "shared-across", ["alice"])
    shut_out = node(project, "open", str(dev_credentials), "bob", VAULT, "shared-across")
    shared = node(project, "share", str(dev_credentials), "alice", VAULT, "shared-across", "bob")
    back_in = await python_open(dev_server, dev_credentials, "bob", "shared-across")

    assert shut_out == {"refused": "NOT_A_RECIPIENT"}
    assert shared == {"version": "3", "wrappedKeys": 2}
    assert back_in == "the door code is 4711"
