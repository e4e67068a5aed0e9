"""A DirectoryService that serves whatever key log a test makes it serve, in process: the server
a KeyDirectory must not believe. Its checkpoints are real (zkplatform_tlog: signed by a log key,
cosigned by two witnesses, RFC 9162 roots and consistency proofs); what it holds is the test's
to bend: entries rolled back, rewritten or inserted, pages cut small, GetRecipientKeys answers
made up. It checks nothing it is sent."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pyqwest
from pyqwest.testing import ASGITransport

from zkplatform_api.platform.v1 import directory_pb2
from zkplatform_api.platform.v1.directory_connect import DirectoryServiceASGIApplication, DirectoryServiceClient
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.merkle import consistency_proof, leaf_hash, root_hash
from zkplatform_tlog.note import Cosigner, NoteSigner, generate_cosigner_key, generate_signer_key, sign_note
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    Entry,
    EntrySignature,
    PrincipalReset,
    b64url_decode,
    parse_entry,
    parse_statement,
)

TENANT = "acme"
T0 = 1_800_000_000


def _seed(label: str) -> bytes:
    return hashlib.sha256(f"lying server: {label}".encode()).digest()


LOG = NoteSigner.from_skey(generate_signer_key("log.test", seed=_seed("log"))[0])
WITNESSES = [
    Cosigner.from_skey(generate_cosigner_key(f"witness-{n}.test", seed=_seed(f"witness {n}"))[0]) for n in (1, 2)
]


class LyingDirectory:
    """The service. `entries` is the log; `served_size` serves a checkpoint of that many entries
    (None: all); `cosigned_at` is the witnesses' time; `page_size` caps every page;
    `recipient_answer`, when set, makes up GetRecipientKeys' devices."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.entries: list[str] = []
        self.served_size: int | None = None
        self.clock = clock
        self.page_size = 2
        self.recipient_answer: list[directory_pb2.Device] | None = None
        self.recipient_size: int | None = None
        self.calls: list[str] = []
        self.after_list: Callable[[], None] | None = None  # a change that lands right after a listing
        self.list_past_size = False  # pages that run on past the checkpoint, to the last entry

    # What the test does to it

    def append(self, entry: Entry) -> int:
        self.entries.append(entry.canonical().decode())
        return len(self.entries) - 1

    def reset(self, principal_id: str, created: int = T0) -> int:
        statement = PrincipalReset(TENANT, principal_id, created)
        signature = EntrySignature(LOG.key_id.hex(), LOG.sign(statement.canonical().decode()))
        return self.append(Entry(statement, (signature,)))

    def note(self, size: int) -> str:
        hashes = [leaf_hash(data.encode()) for data in self.entries[:size]]
        body = Checkpoint(f"{LOG.name}/{TENANT}/key-log/v1", size, root_hash(hashes)).body()
        at = int(self.clock()) - 1
        return sign_note(body, [LOG]) + "".join(witness.cosign(body, at) for witness in WITNESSES)

    @property
    def size(self) -> int:
        return len(self.entries) if self.served_size is None else self.served_size

    def client(self) -> DirectoryServiceClient:
        app = DirectoryServiceASGIApplication(self)
        return DirectoryServiceClient("http://lying.test", http_client=pyqwest.Client(ASGITransport(app)))

    def live_devices(self, size: int) -> list[directory_pb2.Device]:
        """The live devices of the first `size` entries, read without a check."""
        devices: dict[str, directory_pb2.Device] = {}
        for index, data in enumerate(self.entries[:size]):
            statement = parse_entry(data).statement
            if isinstance(statement, DeviceKeys):
                devices[statement.device_id] = _device(statement, index)
            elif isinstance(statement, DeviceRevocation):
                devices.pop(statement.device, None)
            else:
                devices = {k: d for k, d in devices.items() if d.principal_id != statement.principal_id}
        return list(devices.values())

    # DirectoryService

    async def list_key_log(
        self, request: directory_pb2.ListKeyLogRequest, ctx: Any
    ) -> directory_pb2.ListKeyLogResponse:
        self.calls.append("ListKeyLog")
        size, start = self.size, request.start_index
        offset = int(request.page_token or start)
        last = len(self.entries) if self.list_past_size else size
        end = min(last, offset + self.page_size)
        page = [directory_pb2.KeyLogEntry(index=i, data=self.entries[i]) for i in range(offset, end)]
        hashes = [leaf_hash(data.encode()) for data in self.entries[:size]]
        proof = consistency_proof(hashes, start) if start <= size else []
        if self.after_list is not None:
            self.after_list()
        return directory_pb2.ListKeyLogResponse(
            entries=page,
            checkpoint=directory_pb2.Checkpoint(note=self.note(size)),
            consistency_proof=proof,
            next_page_token=str(end) if end < last else "",
        )

    async def get_recipient_keys(
        self, request: directory_pb2.GetRecipientKeysRequest, ctx: Any
    ) -> directory_pb2.GetRecipientKeysResponse:
        self.calls.append("GetRecipientKeys")
        size = self.recipient_size if self.recipient_size is not None else self.size
        devices = self.recipient_answer if self.recipient_answer is not None else self.live_devices(size)
        asked = set(request.principal_ids)
        return directory_pb2.GetRecipientKeysResponse(
            devices=[d for d in devices if d.principal_id in asked or self.recipient_answer is not None],
            checkpoint=directory_pb2.Checkpoint(note=self.note(size)),
        )

    async def publish_device(
        self, request: directory_pb2.PublishDeviceRequest, ctx: Any
    ) -> directory_pb2.PublishDeviceResponse:
        statement = parse_statement(request.statement)
        assert isinstance(statement, DeviceKeys)
        signatures = [EntrySignature(statement.device_id, b64url_decode(request.signature, 64))]
        if request.endorsement:
            signatures.append(EntrySignature(statement.endorser, b64url_decode(request.endorsement, 64)))
        index = self.append(Entry(statement, tuple(signatures)))
        return directory_pb2.PublishDeviceResponse(device=_device(statement, index))

    async def revoke_device(
        self, request: directory_pb2.RevokeDeviceRequest, ctx: Any
    ) -> directory_pb2.RevokeDeviceResponse:
        statement = parse_statement(request.statement)
        assert isinstance(statement, DeviceRevocation)
        self.append(Entry(statement, (EntrySignature(statement.revoker, b64url_decode(request.signature, 64)),)))
        return directory_pb2.RevokeDeviceResponse(device=directory_pb2.Device(device_id=statement.device))

    async def reset_principal(
        self, request: directory_pb2.ResetPrincipalRequest, ctx: Any
    ) -> directory_pb2.ResetPrincipalResponse:
        self.reset(request.principal_id)
        return directory_pb2.ResetPrincipalResponse()


def _device(statement: DeviceKeys, index: int) -> directory_pb2.Device:
    return directory_pb2.Device(
        device_id=statement.device_id,
        tenant_id=statement.tenant_id,
        principal_id=statement.principal_id,
        signing_jwk=statement.signing_jwk,
        agreement_key_id=statement.agreement_key_id,
        agreement_jwk=statement.agreement_jwk,
        endorser_device_id=statement.endorser,
        log_index=index,
    )
