"""What a store refuses a change with: the domain turns each into its own error."""


class AlreadyExists(ValueError):
    """An add for a key that is taken; the message names it."""


class UnknownReference(ValueError):
    """An add that refers to something the store does not have (a vault, a principal)."""


class PrincipalDisabled(ValueError):
    """A token for a disabled principal: none is added until an operator enables it again."""


class ParentRevoked(ValueError):
    """A mint whose parent token was revoked before the new token could be stored: none is."""
