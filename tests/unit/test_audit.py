"""Audit events' bytes and the chain check, without a store."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

from zkplatform.domain.audit import (
    GENESIS,
    Action,
    Actor,
    ActorKind,
    AuditRecord,
    ChainCheck,
    Head,
    appended,
    by_tenant,
    item_event,
)
from zkplatform.domain.models import Item

ALICE = Actor(ActorKind.PRINCIPAL, 1_800_000_000, "alice", "tok_a", "req-1", "203.0.113.7")


def test_the_canonical_bytes_are_compact_json_with_sorted_keys() -> None:
    event = ALICE.event("acme", Action.ITEM_DELETED, vault="v", item="i")
    data = event.canonical()
    assert data == json.dumps(json.loads(data), sort_keys=True, separators=(",", ":")).encode()
    assert json.loads(data) == {
        "action": "item.deleted",
        "actor": {"kind": "principal", "principal": "alice", "token": "tok_a"},
        "clientAddress": "203.0.113.7",
        "requestId": "req-1",
        "target": {"item": "i", "vault": "v"},
        "time": 1_800_000_000,
    }
    by_operator = json.loads(Actor.operator(5).event("acme", Action.TENANT_ADDED, tenant="acme").canonical())
    assert (by_operator["actor"], by_operator["clientAddress"], by_operator["requestId"]) == (
        {"kind": "operator"},
        "",
        "",
    )


def test_non_ascii_ids_are_kept_as_utf8() -> None:
    data = ALICE.event("acme", Action.ITEM_CREATED, vault="vält", item="i").canonical()
    assert "vält".encode() in data


@pytest.mark.parametrize(
    "actor",
    [
        ALICE,
        Actor(ActorKind.PRINCIPAL, 7, 'qu"ote\\back', "tok_\n\t\x00", "r\u2028\U0001f600"),
        Actor.operator(0),
        Actor.service(1_900_000_000, "x-request-<id>&'é", "2001:db8::1"),
    ],
)
def test_the_canonical_bytes_are_what_json_dumps_makes_of_the_event(actor: Actor) -> None:
    event = actor.event("acme", Action.VAULT_MEMBER_ADDED, vault='v"\\', principal="\u00e9\x7f\x1f")
    fields = json.loads(event.canonical())
    assert event.canonical() == json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert fields["target"] == {"vault": 'v"\\', "principal": "\u00e9\x7f\x1f"}
    assert fields["requestId"] == actor.request_id
    assert fields["clientAddress"] == actor.client_address
    assert fields["time"] == actor.at


def chain_of(count: int, tenant: str = "acme") -> list[AuditRecord]:
    events = [ALICE.event(tenant, Action.ITEM_CREATED, vault="v", item=f"i{n}") for n in range(count)]
    return list(appended(None, tenant, events))


def test_each_hash_chains_the_previous_one_from_32_zero_bytes() -> None:
    first, second = chain_of(2)
    assert first.hash == hashlib.sha256(GENESIS + first.event).digest()
    assert second.hash == hashlib.sha256(first.hash + second.event).digest()
    assert [first.sequence, second.sequence] == [1, 2]
    more = list(appended(Head("acme", 2, second.hash), "acme", [ALICE.event("acme", Action.ITEM_DELETED, item="x")]))
    assert more[0].sequence == 3
    assert more[0].hash == hashlib.sha256(second.hash + more[0].event).digest()


def verify(records: list[AuditRecord], head: Head | None) -> str | None:
    check = ChainCheck("acme")
    for record in records:
        if (found := check.check(record)) is not None:
            return str(found)
    found = check.finish(head)
    return None if found is None else str(found)


def head_of(records: list[AuditRecord]) -> Head:
    return Head("acme", records[-1].sequence, records[-1].hash)


def test_verify_names_the_first_event_that_does_not_match() -> None:
    records = chain_of(5)
    head = head_of(records)
    assert verify(records, head) is None

    edited = [*records[:2], replace(records[2], event=records[2].event.replace(b"i2", b"i9")), *records[3:]]
    assert verify(edited, head) == "tenant acme: event 3 does not match its hash (edited, or an earlier event was)"

    rehashed = replace(edited[2], hash=hashlib.sha256(records[1].hash + edited[2].event).digest())
    assert verify([*records[:2], rehashed, *records[3:]], head) == (
        "tenant acme: event 4 does not match its hash (edited, or an earlier event was)"
    )
    assert verify([*records[:2], *records[3:]], head) == "tenant acme: event 3 is missing"
    assert verify(records[:4], head) == "tenant acme: event 5 is missing (the chain's head is at 5)"
    assert verify(records, head_of(records[:4])) == "tenant acme: event 5 was added after the chain's head"
    assert verify(records, replace(head, hash=GENESIS)) == "tenant acme: event 5 does not match the chain's head"
    assert verify(records, None) == "tenant acme: event 5 has no chain head"


def test_events_are_appended_tenant_by_tenant_in_one_order() -> None:
    events = [ALICE.event(tenant, Action.TOKEN_REVOKED, token=tenant) for tenant in ("b", "a", "b", "c", "a")]
    grouped = by_tenant(events)
    assert [tenant for tenant, _ in grouped] == ["a", "b", "c"]
    assert [len(group) for _, group in grouped] == [2, 2, 1]


def test_an_item_event_names_its_item_and_vault_as_any_event_names_its_targets() -> None:
    item = Item("i", "acme", "v", 2, "login", "", 1_800_000_000, None, (), deleted=True)

    event = item_event(ALICE, Action.ITEM_DELETED, item)

    assert event == ALICE.event("acme", Action.ITEM_DELETED, item="i", vault="v")
