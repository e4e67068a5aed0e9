"""What a device's statement must be for the key directory to take it: a statement of the kind
the call expects, about the caller's own principal, made recently, and signed as the contract
says (by the new device itself and its endorser, or by a live device of the principal that
revokes). Each check raises the domain error the contract gives for it; the use cases in
key_directory.py run them in the contract's order.
"""

from __future__ import annotations

from typing import Final, TypeVar

from zkplatform.domain.auth import Caller
from zkplatform.domain.errors import FieldViolation, InvalidArgument, RevokerNotLive, SignatureInvalid
from zkplatform.domain.key_log import Device
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    StatementError,
    b64url_decode,
    parse_statement,
    verify_statement,
)

# How far a statement's `created` may be from the server's time, either way.
MAX_STATEMENT_SKEW_SECONDS: Final = 600

S = TypeVar("S", DeviceKeys, DeviceRevocation)


def parse(text: str, kind: type[S], what: str) -> S:
    try:
        statement = parse_statement(text)
    except StatementError as error:
        raise InvalidArgument([FieldViolation("statement", str(error))]) from None
    if not isinstance(statement, kind):
        raise InvalidArgument([FieldViolation("statement", f"must be {what}")])
    return statement


def require_own(caller: Caller, statement: DeviceKeys | DeviceRevocation) -> None:
    if statement.tenant_id != caller.tenant_id:
        raise InvalidArgument([FieldViolation("statement", "tenantId must be the caller's tenant")])
    if statement.principal_id != caller.principal.principal_id:
        raise InvalidArgument([FieldViolation("statement", "principalId must be the caller's principal")])


def require_recent(created: int, now: int) -> None:
    if abs(created - now) > MAX_STATEMENT_SKEW_SECONDS:
        raise InvalidArgument(
            [
                FieldViolation(
                    "statement",
                    f"created ({created}) must be within {MAX_STATEMENT_SKEW_SECONDS // 60} minutes of the"
                    f" server's time ({now}): make the statement again",
                )
            ]
        )


def decoded_signature(text: str, field: str) -> bytes:
    try:
        return b64url_decode(text, 64)
    except ValueError:
        raise SignatureInvalid(field, "must be an Ed25519 signature: 86 characters of base64url") from None


def published_by(device: Device, statement: DeviceKeys) -> bool:
    """Whether the device is the one this very statement published (a repeat)."""
    return (
        device.device_id == statement.device_id
        and device.principal_id == statement.principal_id
        and device.signing_jwk == statement.signing_jwk
        and device.agreement_jwk == statement.agreement_jwk
        and device.endorser == statement.endorser
        and device.created_at == statement.created
    )


def device_of(statement: DeviceKeys, index: int) -> Device:
    return Device(
        tenant_id=statement.tenant_id,
        principal_id=statement.principal_id,
        device_id=statement.device_id,
        signing_jwk=statement.signing_jwk,
        agreement_key_id=statement.agreement_key_id,
        agreement_jwk=statement.agreement_jwk,
        endorser=statement.endorser,
        created_at=statement.created,
        log_index=index,
    )


def check_endorsement(statement: DeviceKeys, endorsement: str, devices: list[Device]) -> bytes | None:
    """The endorser's signature, checked with its key when the principal has that device
    (live or not: whether it may endorse is decided later, in the contract's order)."""
    if statement.endorser == "":
        if endorsement:
            raise InvalidArgument([FieldViolation("endorsement", "must be empty for a first device")])
        return None
    if not endorsement:
        raise SignatureInvalid("endorsement", "is required: the statement names an endorser")
    endorsed = decoded_signature(endorsement, "endorsement")
    endorser = next((device for device in devices if device.device_id == statement.endorser), None)
    if endorser is not None and not verify_statement(endorser.signing_jwk, statement, endorsed):
        raise SignatureInvalid("endorsement", "is not the endorser's signature of the statement")
    return endorsed


def check_revoker(statement: DeviceRevocation, signature: str, devices: dict[str, Device], *, live: bool) -> bytes:
    """The revoker's signature: it must be a (live, when `live`) device of the principal
    whose signature of the statement it is."""
    revoker = devices.get(statement.revoker)
    if revoker is None or (live and not revoker.live):
        raise RevokerNotLive(statement.revoker)
    revoked_by = decoded_signature(signature, "signature")
    if not verify_statement(revoker.signing_jwk, statement, revoked_by):
        raise SignatureInvalid("signature", "is not the revoking device's signature of the statement")
    return revoked_by
