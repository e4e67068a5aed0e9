"""The ports: what the domain needs from storage, one module per port (typing.Protocol), and
`store.Store`, everything a store adapter provides.

Every method that changes state takes the `Actor` of the change and appends the
change's audit events (domain/audit.py) in the same transaction: a change whose
events cannot be written is not made. Recording a token's last use, counting
mint attempts and remembering DPoP proofs are bookkeeping, not changes: they
are not audited.

Each method is one atomic step of the store, so that a SQL store can implement
it as one transaction and stay correct across processes and hosts. In
particular the delete is a single compare-and-set on (item, version) that also
takes the vault's next sequence number: never a read followed by a write.

The five writes a client may name with a request id (domain/request_ids.py) take it as
`request`. With one, the method first looks for the principal's record of that id made within
the retention period: found, it changes nothing and answers Repeated (the same fingerprint) or
Reused (another); else it runs as without, and when it succeeds it records its answer under
the id in the same transaction as its change. A failure records nothing. Concurrent calls with
one id, from any process, apply at most once: the others wait for its commit and answer from its
record.
"""
