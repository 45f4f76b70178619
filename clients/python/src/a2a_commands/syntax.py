"""Which messages a kit sends to the sidecar, and which it answers when the sidecar is away.

Both rules are docs/kit-contract.md's (sections 1 and 2), pinned with the TypeScript kit
and the service by ``docs/vectors/messages.json``.
"""

from __future__ import annotations

import re

from a2a.types import a2a_pb2 as sdk

# `/`, a name, then the end or a whitespace character. Whitespace is written out: it is
# exactly Python's str.isspace() (the reference's `\s`), in every kit's language alike.
_COMMAND_SYNTAX = re.compile(
    "/([a-z][a-z0-9-]*)(?:[\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]|\\Z)"
)


def _single_text(message: sdk.Message) -> str | None:
    if len(message.parts) != 1 or message.parts[0].WhichOneof("content") != "text":
        return None
    return message.parts[0].text


def may_be_command(message: sdk.Message) -> bool:
    """Whether ``message`` may be a command: one text part, ``/`` then ``a``-``z``.

    A message for which this is false can never be a command, whatever is registered,
    so it goes to the wrapped executor without a call to the sidecar.
    """
    text = _single_text(message)
    return text is not None and len(text) >= 2 and text[0] == "/" and "a" <= text[1] <= "z"


def command_name(message: sdk.Message) -> str | None:
    """The name of a message with command syntax (registered or not), else ``None``."""
    text = _single_text(message)
    match = _COMMAND_SYNTAX.match(text) if text is not None else None
    return match.group(1) if match else None
