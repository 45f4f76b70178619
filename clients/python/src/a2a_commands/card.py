"""The agent card's commands extension entry, kept current from WatchSpecs."""

from __future__ import annotations

import asyncio
import logging
import random

from a2a.types import a2a_pb2 as sdk

from ._pb import commands_pb2 as pb
from .client import CommandsClient
from .convert import extension_from_json
from .errors import CommandsError

logger = logging.getLogger(__name__)

_CARD_LISTING_TIMEOUT = 5.0
"""Seconds the first card request waits for the registry before it is served without it."""


class CommandsCard:
    """Puts the commands extension entry into an a2a-sdk ``AgentCard``.

    Use it as the SDK's card modifier
    (``create_agent_card_routes(card, card_modifier=CommandsCard(client))``): each served
    card gets the current entry in ``capabilities.extensions`` (replacing any entry with
    the same URI). The first call lists the registry; from then on a background task
    follows WatchSpecs, reconnecting with exponential backoff (with jitter) whenever the
    service goes away. While it is away the card keeps the last entry seen; before any
    was seen, the card is served without one.

    Args:
        client: The service's client.
        min_backoff: First wait before reconnecting, in seconds.
        max_backoff: Longest wait between reconnection attempts, in seconds.
    """

    def __init__(self, client: CommandsClient, *, min_backoff: float = 0.2, max_backoff: float = 5.0) -> None:
        self._client = client
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._entry: sdk.AgentExtension | None = None
        self._revision = 0
        self._changed = asyncio.Condition()
        self._watcher: asyncio.Task[None] | None = None

    @property
    def entry(self) -> sdk.AgentExtension | None:
        """The latest extension entry, or ``None`` before the first answer."""
        return self._entry

    @property
    def revision(self) -> int:
        """The registry revision of :attr:`entry` (0 before the first answer)."""
        return self._revision

    async def __call__(self, card: sdk.AgentCard) -> sdk.AgentCard:
        """The SDK card modifier: a copy of ``card`` with the current entry."""
        if self._watcher is None:
            self.start()
            try:
                # A sidecar that hangs must not hold the card: it is served without the
                # entry after a short wait.
                state = await asyncio.wait_for(self._client.list_specs(), _CARD_LISTING_TIMEOUT)
                if self._entry is None:  # the watcher may have been quicker
                    await self._update(state)
            except (CommandsError, asyncio.TimeoutError) as error:
                logger.warning("a2a-commands: card served without commands: %s", error or "no answer in time")
        return self.apply(card)

    def apply(self, card: sdk.AgentCard) -> sdk.AgentCard:
        """A copy of ``card`` whose extensions hold the current entry."""
        served = sdk.AgentCard()
        served.CopyFrom(card)
        if self._entry is not None:
            extensions = served.capabilities.extensions
            kept = [e for e in extensions if e.uri != self._entry.uri]
            del extensions[:]
            extensions.extend([*kept, self._entry])
        return served

    def start(self) -> None:
        """Starts following WatchSpecs (done by the first card served)."""
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch(), name="a2a-commands-card")

    async def wait_for_revision(self, revision: int) -> None:
        """Waits until the entry reflects registry ``revision`` or a later one."""
        self.start()
        async with self._changed:
            await self._changed.wait_for(lambda: self._revision >= revision)

    async def aclose(self) -> None:
        """Stops following WatchSpecs."""
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.gather(self._watcher, return_exceptions=True)
            self._watcher = None

    async def _watch(self) -> None:
        backoff = self._min_backoff
        while True:
            try:
                async for state in self._client.watch_specs():
                    backoff = self._min_backoff
                    await self._update(state)
                reason = "stream ended"
            except Exception as error:  # a bad answer must not end the watcher either
                reason = str(error)
            if self._client.closed:
                return
            delay = backoff * random.uniform(0.5, 1.0)
            logger.info("a2a-commands: watch lost (%s); retrying in %.1f s", reason, delay)
            await asyncio.sleep(delay)
            backoff = min(backoff * 2, self._max_backoff)

    async def _update(self, state: pb.ListSpecsResponse) -> None:
        if state.card_extension_json:
            self._entry = extension_from_json(state.card_extension_json)
            self._revision = state.revision
            async with self._changed:
                self._changed.notify_all()
