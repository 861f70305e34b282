"""tokend's application layer: one typed request and result per operation, in plain Python.

``App`` (``service.py``) runs every operation; the gRPC servicer (``server/servicer.py``) and
the HTTP routes (``server/web/``) are thin adapters onto it, and reach it with a
``CallContext`` (``context.py``) for deadlines and cancellation. Nothing here imports grpc or
protobuf. This file imports nothing, so the low-level modules (``fields``, ``context``) load
without the whole layer: ``from tokend.server.app.service import App``.
"""
