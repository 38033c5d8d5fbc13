"""A tab's view of a shared record store whose next write waits for another tab's work first: the
race of two tabs between one's read of a conversation and its write (DESIGN.md §9, §17)."""

from __future__ import annotations


class WriteHeld:
    """The shared ``backend`` (an ``app.records.RecordBackend``) as one tab sees it: its next write first
    lets ``before()`` (an async callable set by the test, then cleared) run to its end, so another
    tab's whole write lands between this tab's read and its write."""

    def __init__(self, backend):
        self._backend, self.before = backend, None

    def __getattr__(self, name):
        return getattr(self._backend, name)

    async def write(self, ops):
        before, self.before = self.before, None
        if before is not None:
            await before()
        return await self._backend.write(ops)
