"""The domain: models, errors and use cases. No protobuf, no transport."""
