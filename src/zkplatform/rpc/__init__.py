"""The RPC layer: protobuf <-> domain, and the behaviour every call shares.

- front/: ASGI middlewares that run before connectrpc (refusals connectrpc would answer
  without a reason, or not at all).
- interceptors/: what runs inside connectrpc around each call (error mapping, authentication,
  field checks).
- servicers/: one per service, protobuf in and out, the use cases in between.
- encoding/: the JSON codec and the google.rpc details, in connectrpc's protobuf runtime.
- call_auth.py: who is calling, as authentication found it, for the servicer (`call_auth(ctx)`).
- errors.py: the one place that turns failures into Connect errors; origin.py: what a request
  was addressed to; internals.py: the private names of connectrpc we cannot do without.
"""
