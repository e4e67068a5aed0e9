"""Servicers: each subclasses its generated service and turns protobuf into use-case calls and back."""
