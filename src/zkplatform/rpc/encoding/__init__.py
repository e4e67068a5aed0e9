"""Protobuf glue: the JSON codec, and google.rpc details and descriptors in connectrpc's protobuf runtime."""
