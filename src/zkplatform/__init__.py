"""zkplatform: the server side of the zero-knowledge platform's public API."""
