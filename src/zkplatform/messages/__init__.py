"""The generated messages and the domain: conversions and the field rules of the protos.

Shared by the two ways in (the RPC servicers and the operator's import), so
neither depends on the other. No transport here: no connectrpc, no HTTP.
"""
