"""Authentication of every platform RPC, before its body is read.

The Authorization header must carry exactly one live token, with a DPoP proof
when the token is key-bound (a token in the URL was refused earlier, at the
front). The caller and the request's proof are then filed under the call's context
(rpc/call_auth.py), where the servicer finds them, and the caller is told to the call's
record for the access line (observability/calls.py's note_caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.auth import Authenticator, Presented
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.errors import ProofInvalid, TokenInvalid, TokenMissing
from zkplatform.observability.calls import current_call, note_caller
from zkplatform.rpc.call_auth import CallAuth, authenticated
from zkplatform.rpc.origin import Origin


class Authenticate:
    """Metadata interceptor: refuses a call without one live token (and its proof) as `unauthenticated`."""

    def __init__(self, authenticator: Authenticator, origin: Origin) -> None:
        self._authenticator = authenticator
        self._origin = origin  # what a DPoP proof's htu must name: see rpc/origin.py

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        call = current_call()
        presented = presented_token(ctx.request_headers.getall("authorization"))
        proofs = ctx.request_headers.getall("dpop")
        if len(proofs) > 1:
            raise ProofInvalid("DPoP proof: more than one DPoP header")
        htu = self._origin.url(call.scope) if proofs else ""  # only a proof has an htu to compare
        proof = ProofRequest(proof=proofs[0] if proofs else None, htm=ctx.http_method, htu=htu)
        caller = await self._authenticator.authenticate(presented, proof, call.request_id, call.client_address)
        authenticated(ctx, CallAuth(caller, proof))
        note_caller(caller.principal.principal_id, caller.token.token_id)

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        return None


def presented_token(authorizations: Sequence[str]) -> Presented:
    """The token of the one Authorization header, and its scheme (RFC 6750, RFC 9449)."""
    if not authorizations or authorizations == [""]:
        raise TokenMissing
    if len(authorizations) > 1:
        raise TokenInvalid("more than one Authorization header")
    scheme, _, token = authorizations[0].strip().partition(" ")
    scheme = scheme.lower()
    if scheme not in ("bearer", "dpop") or not token.strip():
        raise TokenInvalid("the Authorization header must be 'Bearer <token>' (or 'DPoP <token>' for a bound token)")
    return Presented(token=token.strip(), dpop_scheme=scheme == "dpop")
