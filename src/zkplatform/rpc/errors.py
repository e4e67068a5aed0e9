"""The one place that turns failures into Connect errors.

Every non-OK answer carries exactly one google.rpc.ErrorInfo, whose domain is
ERROR_DOMAIN and whose reason is the name of a value of the generated enum
platform.v1.ErrorReason (proto/zkplatform_api/platform/v1/errors.proto), so a
reason cannot be misspelt here; `invalid_argument` also carries a BadRequest,
and `resource_exhausted` and `unavailable` a RetryInfo. `refusal()` builds every
such error: the mapping of domain errors below, the servicers and interceptors
that refuse a call themselves, and the front's refusals before connectrpc
(rpc/front/), which write it with `send_error`.

ErrorMapping (rpc/interceptors/error_mapping.py) is the first interceptor of every
service, so its on_end sees the failure of every later interceptor, of the body's
decoding and of the servicer, and the errors connectrpc raises itself once the call
has started (a body over the limit, the deadline, an undecodable body, an unknown
compression), which `connect_error_of` here gives their reason. Domain errors get their code and details here, and
anything unexpected becomes `internal` with a generic message, its details going
only to the server log. What connectrpc refuses before any interceptor runs (a
wrong protocol version, a malformed timeout header) the front refuses first
(rpc/front/protocol_headers.py), so that it carries its reason too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2

from zkplatform.domain import errors as domain
from zkplatform.domain.key_log import UnreadableKeyLog
from zkplatform.observability.calls import note_code
from zkplatform.rpc.encoding.details import error_detail
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

log = logging.getLogger(__name__)

# ErrorInfo.domain of every error this service answers: the same for every error, forever.
ERROR_DOMAIN: Final = "zkplatform.dev"
ERROR_INFO: Final = error_details_pb2.ErrorInfo.DESCRIPTOR.full_name
# The codes whose answers say when to try again (google.rpc.RetryInfo).
RETRYABLE: Final = frozenset({Code.RESOURCE_EXHAUSTED, Code.UNAVAILABLE})
# Seconds to wait before trying again, where nothing more precise is known.
RETRY_AFTER_SECONDS: Final = 1
INTERNAL_MESSAGE: Final = "internal error"


def reason_name(reason: ErrorReason) -> str:
    """The reason string of an ErrorReason value: its name."""
    return ErrorReason.Name(reason)


def refusal(  # noqa: PLR0913 # the parts of an error answer, all but the first three optional
    code: Code,
    reason: ErrorReason,
    message: str,
    *,
    metadata: Mapping[str, str] | None = None,
    violations: Sequence[domain.FieldViolation] = (),
    retry_after_seconds: int | None = None,
) -> ConnectError:
    """An error answer: its code, exactly one ErrorInfo (this reason, this metadata), a BadRequest
    for `invalid_argument` (`violations`, or one naming no field and saying `message`), a RetryInfo
    for `resource_exhausted` and `unavailable` (after `retry_after_seconds`, which those need)."""
    info = error_details_pb2.ErrorInfo(reason=reason_name(reason), domain=ERROR_DOMAIN, metadata=metadata or {})
    details = [error_detail(info)]
    if code is Code.INVALID_ARGUMENT:
        named = violations or [domain.FieldViolation("", message)]
        bad_request = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description) for v in named
            ]
        )
        details.append(error_detail(bad_request))
    if code in RETRYABLE:
        if retry_after_seconds is None:
            msg = f"a {code.value} answer says when to try again: give retry_after_seconds"
            raise ValueError(msg)
        retry = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=max(retry_after_seconds, 0)))
        details.append(error_detail(retry))
    return ConnectError(code, message, details)


def internal_error() -> ConnectError:
    return refusal(Code.INTERNAL, ErrorReason.INTERNAL, INTERNAL_MESSAGE)


def carries_reason(error: ConnectError) -> bool:
    """Whether the error was made by refusal() (it has its ErrorInfo)."""
    return any(detail.type_name == ERROR_INFO for detail in error.details)


# The code and reason of each domain error a call can end with. A class not listed answers as
# the nearest of its bases that is; a domain error with none is a bug, answered `internal`.
_DOMAIN_ERRORS: Final[Mapping[type[domain.DomainError], tuple[Code, ErrorReason]]] = {
    domain.InvalidArgument: (Code.INVALID_ARGUMENT, ErrorReason.FIELD_INVALID),
    domain.PageTokenInvalid: (Code.INVALID_ARGUMENT, ErrorReason.PAGE_TOKEN_INVALID),
    domain.RequestIdReused: (Code.INVALID_ARGUMENT, ErrorReason.REQUEST_ID_REUSED),
    domain.TokenMisplaced: (Code.INVALID_ARGUMENT, ErrorReason.TOKEN_MISPLACED),
    domain.SignatureInvalid: (Code.INVALID_ARGUMENT, ErrorReason.SIGNATURE_INVALID),
    domain.TokenMissing: (Code.UNAUTHENTICATED, ErrorReason.TOKEN_MISSING),
    domain.TokenInvalid: (Code.UNAUTHENTICATED, ErrorReason.TOKEN_INVALID),
    domain.TokenExpired: (Code.UNAUTHENTICATED, ErrorReason.TOKEN_EXPIRED),
    domain.TokenRevoked: (Code.UNAUTHENTICATED, ErrorReason.TOKEN_REVOKED),
    domain.ProofInvalid: (Code.UNAUTHENTICATED, ErrorReason.DPOP_PROOF_INVALID),
    domain.ProofReplayed: (Code.UNAUTHENTICATED, ErrorReason.DPOP_PROOF_REPLAYED),
    domain.TokenOfDisabledPrincipal: (Code.UNAUTHENTICATED, ErrorReason.PRINCIPAL_DISABLED),
    domain.ScopeMissing: (Code.PERMISSION_DENIED, ErrorReason.SCOPE_MISSING),
    domain.TenantMismatch: (Code.PERMISSION_DENIED, ErrorReason.TENANT_MISMATCH),
    domain.VaultAccessDenied: (Code.PERMISSION_DENIED, ErrorReason.VAULT_ACCESS_DENIED),
    domain.PrincipalAccessDenied: (Code.PERMISSION_DENIED, ErrorReason.PRINCIPAL_ACCESS_DENIED),
    domain.ScopesNotHeld: (Code.PERMISSION_DENIED, ErrorReason.SCOPES_NOT_HELD),
    domain.PrincipalIsDisabled: (Code.PERMISSION_DENIED, ErrorReason.PRINCIPAL_DISABLED),
    domain.KeyAccessDenied: (Code.PERMISSION_DENIED, ErrorReason.KEY_ACCESS_DENIED),
    domain.ItemNotFound: (Code.NOT_FOUND, ErrorReason.ITEM_NOT_FOUND),
    domain.TokenNotFound: (Code.NOT_FOUND, ErrorReason.TOKEN_NOT_FOUND),
    domain.KeyNotFound: (Code.NOT_FOUND, ErrorReason.KEY_NOT_FOUND),
    domain.PrincipalNotFound: (Code.NOT_FOUND, ErrorReason.PRINCIPAL_NOT_FOUND),
    domain.ItemExists: (Code.ALREADY_EXISTS, ErrorReason.ITEM_EXISTS),
    domain.KeyExists: (Code.ALREADY_EXISTS, ErrorReason.KEY_EXISTS),
    domain.TokenAlreadyMinted: (Code.ALREADY_EXISTS, ErrorReason.TOKEN_ALREADY_MINTED),
    domain.VersionMismatch: (Code.ABORTED, ErrorReason.VERSION_MISMATCH),
    domain.WatchBehind: (Code.ABORTED, ErrorReason.WATCH_BEHIND),
    domain.ItemDeleted: (Code.FAILED_PRECONDITION, ErrorReason.ITEM_DELETED),
    domain.KeyRevoked: (Code.FAILED_PRECONDITION, ErrorReason.KEY_REVOKED),
    domain.EndorsementRequired: (Code.FAILED_PRECONDITION, ErrorReason.ENDORSEMENT_REQUIRED),
    domain.EndorserNotLive: (Code.FAILED_PRECONDITION, ErrorReason.ENDORSER_NOT_LIVE),
    domain.RevokerNotLive: (Code.FAILED_PRECONDITION, ErrorReason.REVOKER_NOT_LIVE),
    domain.CursorExpired: (Code.FAILED_PRECONDITION, ErrorReason.CURSOR_EXPIRED),
    domain.ParentExpiresSoon: (Code.FAILED_PRECONDITION, ErrorReason.PARENT_EXPIRES_SOON),
    domain.CursorAhead: (Code.OUT_OF_RANGE, ErrorReason.CURSOR_AHEAD),
    domain.MintRateExceeded: (Code.RESOURCE_EXHAUSTED, ErrorReason.RATE_LIMIT_EXCEEDED),
    domain.ActiveTokensExceeded: (Code.RESOURCE_EXHAUSTED, ErrorReason.ACTIVE_TOKEN_LIMIT_EXCEEDED),
    domain.WatchesExceeded: (Code.RESOURCE_EXHAUSTED, ErrorReason.WATCH_LIMIT_EXCEEDED),
    domain.StoreUnavailable: (Code.UNAVAILABLE, ErrorReason.STORE_UNAVAILABLE),
    domain.StoreBusy: (Code.RESOURCE_EXHAUSTED, ErrorReason.STORE_BUSY),
}


def to_connect_error(error: domain.DomainError) -> ConnectError:
    """The Connect form of a domain error (the error table of docs/api.md)."""
    entry = next((_DOMAIN_ERRORS[kind] for kind in type(error).__mro__ if kind in _DOMAIN_ERRORS), None)
    if entry is None:
        log.error("no Connect mapping for domain error %s", type(error).__name__)
        return internal_error()
    code, reason = entry
    retry_after = error.retry_after_seconds if isinstance(error, domain.LimitReached) else None
    if isinstance(error, domain.StoreUnavailable | domain.StoreBusy):
        retry_after = RETRY_AFTER_SECONDS
    violations = error.violations if isinstance(error, domain.InvalidArgument) else ()
    return refusal(
        code, reason, str(error), metadata=_metadata(error), violations=violations, retry_after_seconds=retry_after
    )


def _metadata(error: domain.DomainError) -> dict[str, str]:  # noqa: C901, PLR0911 # one arm per kind with metadata
    match error:
        case domain.ScopeMissing():
            return {"requiredScope": error.scope}
        case domain.ScopesNotHeld():
            return {"refusedScopes": ",".join(error.refused)}
        case domain.VersionMismatch():
            return {"currentVersion": str(error.current_version)}
        case domain.ItemExists():
            state = {"deleted": "true"} if error.deleted else {}
            return {"currentVersion": str(error.current_version), **state}
        case domain.TokenAlreadyMinted():
            return {"tokenId": error.token_id}
        case domain.CursorExpired():
            # minSequence only below a purge horizon; the current epoch always (to start over in).
            below = {} if error.min_sequence is None else {"minSequence": str(error.min_sequence)}
            return {"epoch": error.epoch, **below}
        case domain.EndorserNotLive() | domain.RevokerNotLive():
            return {"deviceId": error.device_id}
        case domain.CursorAhead():
            return {"currentSequence": str(error.current_sequence)}
        case domain.WatchesExceeded():
            return {"limit": str(error.limit), "appliesTo": "principal" if error.per_principal else "server"}
        case domain.LimitReached():
            return {"limit": str(error.limit)}
    return {}


def _of_connectrpc(error: ConnectError, max_body_bytes: int | None) -> ConnectError:  # noqa: PLR0911 # one arm per refusal
    """The reason of an error connectrpc raised itself (connectrpc 0.13; rpc/internals.py names
    the pin): it carries a code and a message, which say which refusal of the protocol it is.

    This is the one place that reads connectrpc's messages. Its errors are plain ConnectErrors,
    with no subclass, detail or attribute of their own, so where one code stands for two
    refusals only the message's start tells them apart:
    - `unimplemented` "unknown compression: ..." (connectrpc/_compression.py,
      unknown_compression_error) is an unsupported encoding; any other `unimplemented` from it
      is a malformed request (a unary call of no message or several);
    - `internal` "protocol error: ..." (connectrpc/_envelope.py, EnvelopeReader: a compressed
      message without compression, invalid envelope flags, a truncated envelope, under
      ConnectEnvelopeReader's code `internal`) is a broken envelope; any other `internal` is a
      failure of connectrpc's own, answered as one.
    tests/rpc/test_error_table.py provokes the unknown compression through connectrpc, so an
    upgrade that rewords it fails there; its table of connectrpc's errors pins the rest."""
    code, message = error.code, error.message
    match code:
        case Code.RESOURCE_EXHAUSTED:  # a body, a decompressed body or a stream message over the limit
            limit = {"maxBytes": str(max_body_bytes)} if max_body_bytes is not None else {}
            return refusal(
                code, ErrorReason.BODY_TOO_LARGE, message, metadata=limit, retry_after_seconds=RETRY_AFTER_SECONDS
            )
        case Code.DEADLINE_EXCEEDED:
            return refusal(code, ErrorReason.DEADLINE_EXCEEDED, message)
        case Code.CANCELED:
            return refusal(code, ErrorReason.REQUEST_CANCELED, message)
        case Code.UNIMPLEMENTED if message.startswith("unknown compression"):
            return refusal(code, ErrorReason.ENCODING_UNSUPPORTED, message)
        case Code.INVALID_ARGUMENT | Code.UNIMPLEMENTED:
            # An undecodable message, a GET without its message, a broken envelope,
            # a unary call of no message or several.
            return refusal(code, ErrorReason.REQUEST_MALFORMED, message)
        case Code.INTERNAL if message.startswith("protocol error"):  # a broken envelope, as gRPC codes it
            return refusal(code, ErrorReason.REQUEST_MALFORMED, message)
        case Code.UNKNOWN:
            # What ended the call was no Exception (a cancellation, a client that stopped reading:
            # rpc/front/client_gone.py), which connectrpc goes on to raise: no answer is written,
            # and whatever ended it says so itself.
            return internal_error()
    log.error("connectrpc failed a call with %s: %s", code.value, message)
    return internal_error()


def connect_error_of(
    error: Exception, ctx: RequestContext[Any, Any], max_body_bytes: int | None = None
) -> ConnectError:
    """The Connect error a failure answers with, written into the call's record as the
    final code. A ConnectError with its reason stands; anything unexpected becomes
    `internal`, its details going only to the server log."""
    if isinstance(error, ConnectError):
        mapped = error if carries_reason(error) else _of_connectrpc(error, max_body_bytes)
    elif isinstance(error, domain.DomainError):
        mapped = to_connect_error(error)
    elif isinstance(error, UnreadableKeyLog):
        # Stored data changed behind the store's back: no bug, so no traceback; the operator is
        # told what to repair (tenant and entry), the caller only that it failed.
        log.error("%s: stored data cannot be read: %s", ctx.method.name, error)
        mapped = internal_error()
    else:
        log.error("unexpected failure in %s", ctx.method.name, exc_info=error)
        mapped = internal_error()
    note_code(mapped.code, mapped.message)
    return mapped
