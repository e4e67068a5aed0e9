"""The HTTP front: the ASGI middlewares a request passes before connectrpc (app.py stacks them)."""
