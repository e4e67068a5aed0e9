"""Authentication at the edge of every RPC, before the body is parsed.

The Authorization header must carry exactly one live token, with a DPoP proof
when the token is key-bound (a token in the URL was refused earlier, by the
edge). The caller and the request's proof are then available to servicers
through `current_caller()` and `current_proof()`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.auth import Authenticator, Caller, Presented
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.errors import Unauthenticated
from zkplatform.observability.calls import note_caller, request_id
from zkplatform.rpc.edge import request_facts

# The caller and the proof of the call being served, in one variable: one set per call.
_authenticated: ContextVar[tuple[Caller, ProofRequest]] = ContextVar("authenticated")

# What a call without a DPoP header proves, by HTTP method: made once, not per call.
_NO_PROOF = {method: ProofRequest(proof=None, htm=method, htu="") for method in ("POST", "GET")}


def current_caller() -> Caller:
    """The authenticated caller of the RPC being served."""
    return _authenticated.get()[0]


def current_proof() -> ProofRequest:
    """The DPoP proof the RPC being served carried, with the request it must describe."""
    return _authenticated.get()[1]


async def authenticate(authenticator: Authenticator, ctx: RequestContext[Any, Any]) -> Caller:
    """The caller of this call, from its headers; refused with Unauthenticated otherwise."""
    presented = presented_token(ctx.request_headers.getall("authorization"))
    proofs = ctx.request_headers.getall("dpop")
    if len(proofs) > 1:
        raise Unauthenticated("DPoP proof: more than one DPoP header")
    if proofs:  # only then is there an htu to compare: building the URL is a tenth of this check
        proof = ProofRequest(proof=proofs[0], htm=ctx.http_method, htu=request_facts.get().url)
    else:
        proof = _NO_PROOF.get(ctx.http_method) or ProofRequest(proof=None, htm=ctx.http_method, htu="")
    caller = await authenticator.authenticate(presented, proof, request_id())
    _authenticated.set((caller, proof))
    note_caller(caller.principal.principal_id, caller.token.token_id)
    return caller


def presented_token(authorizations: Sequence[str]) -> Presented:
    """The token of the one Authorization header, and its scheme (RFC 6750, RFC 9449)."""
    if not authorizations or authorizations == [""]:
        raise Unauthenticated("missing Authorization header")
    if len(authorizations) > 1:
        raise Unauthenticated("more than one Authorization header")
    scheme, _, token = authorizations[0].strip().partition(" ")
    scheme = scheme.lower()
    if scheme not in ("bearer", "dpop") or not token.strip():
        raise Unauthenticated("the Authorization header must be 'Bearer <token>' (or 'DPoP <token>' for a bound token)")
    return Presented(token=token.strip(), dpop_scheme=scheme == "dpop")
