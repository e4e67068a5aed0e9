"""Who is calling: what authentication found, handed to the servicer with the call's context.

connectrpc 0.13 gives every interceptor and the servicer of a call one object, its
`RequestContext`, but no place on it for values of ours (nothing like Go's context values,
and interceptors cannot replace it). So the interceptors file what they found about the caller
under that object here (`authenticated`), and the servicer asks for it (`call_auth(ctx)`):
one typed accessor, keyed by the call's own context. The key is weak: the entry goes with the
context, however the call ends, and nothing needs clearing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from zkplatform.domain.errors import TokenMissing

if TYPE_CHECKING:
    from connectrpc.request import RequestContext

    from zkplatform.domain.auth import Caller
    from zkplatform.domain.broker import MintAttempt
    from zkplatform.domain.dpop import ProofRequest


@dataclass(frozen=True, slots=True)
class CallAuth:
    """The authenticated caller of one call, with the DPoP proof the call carried (and what the
    proof must name), and for a mint the attempt counted before its body was read."""

    caller: Caller
    proof: ProofRequest
    mint_attempt: MintAttempt | None = None


_found: WeakKeyDictionary[RequestContext[Any, Any], CallAuth] = WeakKeyDictionary()


def authenticated(ctx: RequestContext[Any, Any], auth: CallAuth) -> None:
    """What the interceptors found about the caller of this call (rpc/interceptors/auth.py)."""
    _found[ctx] = auth


def call_auth(ctx: RequestContext[Any, Any]) -> CallAuth:
    """The caller of this call. A call no authentication let through (a platform service mounted
    without Authenticate) is refused as `unauthenticated`: never served without a caller."""
    auth = _found.get(ctx)
    if auth is None:
        raise TokenMissing
    return auth
