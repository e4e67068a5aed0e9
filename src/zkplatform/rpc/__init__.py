"""The RPC layer: protobuf <-> domain, and the behaviour every call shares."""
