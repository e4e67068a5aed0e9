"""Interceptors: what every call of a service passes through inside connectrpc, in app.py's order."""
