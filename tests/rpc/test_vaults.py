"""VaultService.ListVaults and GetVault through the whole app in process: a caller finds the
vaults it is a member of and who their members are, whatever its role, and nothing else (another
member's vault, another tenant's, one it left); the order of checks, pages and their tokens, the
GET form and Cache-Control; and the members as the principals DirectoryService answers keys for."""

from __future__ import annotations

from typing import Any

import httpx
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.actors import OPERATOR
from tests.connect import JSON, Codec, brief, detail, error_of, headers
from tests.world import World
from zkplatform.domain.models import Scope, Vault
from zkplatform_api.platform.v1 import directory_pb2, vault_pb2

SERVICE = "/platform.v1.VaultService"
LIST, GET = f"{SERVICE}/ListVaults", f"{SERVICE}/GetVault"
NOT_A_MEMBER = {
    "code": "permission_denied",
    "message": "the caller is not a member of this vault",
    "reason": "VAULT_ACCESS_DENIED",
}


async def call(client: httpx.AsyncClient, codec: Codec, path: str, request: Message, token: str) -> httpx.Response:
    return await client.post(path, content=codec.encode(request), headers=headers(codec, token))


async def get_vault(client: httpx.AsyncClient, codec: Codec, vault_id: str, token: str) -> vault_pb2.Vault:
    response = await call(client, codec, GET, vault_pb2.GetVaultRequest(vault_id=vault_id), token)
    assert response.status_code == 200, response.text
    return codec.decode(response.content, vault_pb2.GetVaultResponse).vault


async def pages(client: httpx.AsyncClient, codec: Codec, token: str, page_size: int = 0) -> list[list[str]]:
    """Every page of the caller's vaults, as their ids."""
    found: list[list[str]] = []
    page_token = ""
    while True:
        request = vault_pb2.ListVaultsRequest(page_size=page_size, page_token=page_token)
        response = await call(client, codec, LIST, request, token)
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        page = codec.decode(response.content, vault_pb2.ListVaultsResponse)
        found.append([vault.vault_id for vault in page.vaults])
        page_token = page.next_page_token
        if not page_token:
            return found


def as_answered(world: World, vault_id: str) -> dict[str, Any]:
    """The development vault as the API answers it: its members sorted."""
    members = sorted(world.vault(vault_id)["members"])
    tenant = next(t.tenant_id for t in world.tenants for v in t.vaults if v["vaultId"] == vault_id)
    return {"vaultId": vault_id, "tenantId": tenant, "members": members}


async def test_get_vault_answers_the_vault_with_its_members(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    response = await call(client, codec, GET, vault_pb2.GetVaultRequest(vault_id="acme-shared"), world.token("bob"))

    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    vault = codec.decode(response.content, vault_pb2.GetVaultResponse).vault
    assert json_format.MessageToDict(vault) == as_answered(world, "acme-shared")
    assert {"alice", "bob"} <= set(vault.members)


async def test_list_vaults_answers_the_callers_vaults_by_id_with_their_members(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    listed = {}
    for principal in ("alice", "bob", "carol"):
        response = await call(client, codec, LIST, vault_pb2.ListVaultsRequest(), world.token(principal))
        assert response.status_code == 200, response.text
        page = codec.decode(response.content, vault_pb2.ListVaultsResponse)
        assert page.next_page_token == ""
        listed[principal] = [json_format.MessageToDict(vault) for vault in page.vaults]

    assert listed == {
        "alice": [as_answered(world, "acme-private"), as_answered(world, "acme-shared")],
        "bob": [as_answered(world, "acme-shared")],
        "carol": [as_answered(world, "globex-main")],  # another tenant's caller: its own vault only
    }


async def test_an_owner_lists_only_the_vaults_it_is_a_member_of(client: httpx.AsyncClient, world: World) -> None:
    """alice owns the tenant, yet every RPC of a vault needs its caller to be a member: she does
    not find the vault only bob is in, and may not read it."""
    await world.platform.store.add_vault(Vault("acme-bobs", "acme", frozenset({"bob"})), OPERATOR)

    assert await pages(client, JSON, world.token("alice")) == [["acme-private", "acme-shared"]]
    assert await pages(client, JSON, world.token("bob")) == [["acme-bobs", "acme-shared"]]
    refused = await call(client, JSON, GET, vault_pb2.GetVaultRequest(vault_id="acme-bobs"), world.token("alice"))
    assert brief(error_of(refused)) == NOT_A_MEMBER


async def test_a_vault_the_caller_may_not_see_answers_as_one_that_does_not_exist(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    answers = [
        await call(client, codec, GET, vault_pb2.GetVaultRequest(vault_id=vault_id), world.token("bob"))
        for vault_id in ("acme-private", "globex-main", "no-such-vault")  # another's, another tenant's, none
    ]

    assert [a.status_code for a in answers] == [403, 403, 403]
    assert [brief(error_of(a)) for a in answers] == [NOT_A_MEMBER] * 3
    assert all(a.headers["cache-control"] == "no-store" for a in answers)


async def test_a_member_removed_no_longer_finds_the_vault(client: httpx.AsyncClient, world: World) -> None:
    assert await world.platform.store.remove_vault_member("acme-shared", "bob", OPERATOR)

    assert await pages(client, JSON, world.token("bob")) == [[]]
    refused = await call(client, JSON, GET, vault_pb2.GetVaultRequest(vault_id="acme-shared"), world.token("bob"))
    assert brief(error_of(refused)) == NOT_A_MEMBER
    assert "bob" not in (await get_vault(client, JSON, "acme-shared", world.token("alice"))).members


async def test_both_need_the_read_scope(client: httpx.AsyncClient, world: World) -> None:
    alice = await world.platform.store.get_principal("alice")
    assert alice is not None
    scopes = [Scope.VAULT_ITEMS_WRITE, Scope.DIRECTORY_KEYS_READ]
    writer = (await world.platform.issuer.issue(alice, 3600, scopes)).secret
    for path, request in (
        (LIST, vault_pb2.ListVaultsRequest()),
        (GET, vault_pb2.GetVaultRequest(vault_id="acme-shared")),
    ):
        error = error_of(await call(client, JSON, path, request, writer))
        assert brief(error) == {
            "code": "permission_denied",
            "message": "the token lacks the scope vault.items.read",
            "reason": "SCOPE_MISSING",
        }, path


async def test_pages_go_through_every_vault_once(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    for n in range(5):
        await world.platform.store.add_vault(Vault(f"acme-more-{n}", "acme", frozenset({"alice"})), OPERATOR)

    found = await pages(client, codec, world.token("alice"), page_size=2)

    assert found == [
        ["acme-more-0", "acme-more-1"],
        ["acme-more-2", "acme-more-3"],
        ["acme-more-4", "acme-private"],
        ["acme-shared"],
    ]


async def test_a_page_token_is_good_only_for_the_caller_it_was_issued_to(
    client: httpx.AsyncClient, world: World
) -> None:
    alice, bob = world.token("alice"), world.token("bob")
    await world.platform.store.add_vault(Vault("acme-both", "acme", frozenset({"alice", "bob"})), OPERATOR)
    first = await call(client, JSON, LIST, vault_pb2.ListVaultsRequest(page_size=1), alice)
    page_token = JSON.decode(first.content, vault_pb2.ListVaultsResponse).next_page_token
    assert page_token

    answers = [
        await call(client, JSON, LIST, vault_pb2.ListVaultsRequest(page_token=token), bob)
        for token in (page_token, "garbage")
    ]

    for answer in answers:
        error = error_of(answer)
        assert brief(error)["reason"] == "PAGE_TOKEN_INVALID", error
        assert [v["field"] for v in detail(error, "google.rpc.BadRequest")["fieldViolations"]] == ["pageToken"]
    resumed = await call(client, JSON, LIST, vault_pb2.ListVaultsRequest(page_token=page_token), alice)
    assert [v.vault_id for v in JSON.decode(resumed.content, vault_pb2.ListVaultsResponse).vaults] == [
        "acme-private",
        "acme-shared",
    ]


async def test_the_get_form_serves_both(client: httpx.AsyncClient, world: World) -> None:
    for path, request, answer in (
        (LIST, vault_pb2.ListVaultsRequest(), vault_pb2.ListVaultsResponse),
        (GET, vault_pb2.GetVaultRequest(vault_id="acme-shared"), vault_pb2.GetVaultResponse),
    ):
        query = {"connect": "v1", "encoding": "json", "message": json_format.MessageToJson(request, indent=None)}
        response = await client.get(path, params=query, headers={"Authorization": f"Bearer {world.token('bob')}"})
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        assert JSON.decode(response.content, answer).ByteSize() > 0


async def test_the_members_are_principals_the_directory_answers_keys_for(
    client: httpx.AsyncClient, world: World
) -> None:
    """How a client seals for a vault's members: GetVault, then their devices (each member of the
    development vaults has a demo device)."""
    bob = world.token("bob")
    members = list((await get_vault(client, JSON, "acme-shared", bob)).members)
    request = directory_pb2.GetRecipientKeysRequest(principal_ids=members)
    response = await call(client, JSON, "/platform.v1.DirectoryService/GetRecipientKeys", request, bob)

    assert response.status_code == 200, response.text
    devices = JSON.decode(response.content, directory_pb2.GetRecipientKeysResponse).devices
    assert sorted({device.principal_id for device in devices}) == members
