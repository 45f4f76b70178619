"""Code generated from ``proto/a2a/commands/v1/`` by ``tools/generate.py``: do not edit.

Protobuf package ``a2a.commands.v1``, moved here so that it does not collide with
a2a-sdk's top-level ``a2a`` package.
"""
