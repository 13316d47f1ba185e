"""kvblob for Python engines: load a KV-cache store's driver and move blocks.

    import kvblob, numpy as np
    plugin = kvblob.load("memory")          # a name, a path, or a config.toml
    with plugin.open({"capacity": "1G"}) as driver:
        blocks = np.zeros((8, 65536), dtype=np.uint8)
        region = driver.register(blocks)
        keys = kvblob.block_keys("engine-a", tokens, 16)
        op = driver.put([(k, region, i * 65536, 65536) for i, k in enumerate(keys)])
        op.wait()
        print([r.status for r in op.results()])

Every call into a driver releases the GIL. Memory registered from Python
stays alive while any operation may touch it; refusals raise kvblob.Error
subclasses naming the rule (CallError.rule, LoadError.stage and .file).

In asyncio, an operation is awaitable: `results = await op` waits until it
is settled (results final, access no longer open) and gives its results;
`await op.settle(timeout)` gives True, or False on timeout. A driver that
announces completions (ABI 1.1 notify) wakes the event loop through its
completion descriptor; any other is polled with growing pauses.
"""
import asyncio
import os
import weakref

from ._kvblob import (  # noqa: F401
    Access,
    CallError,
    ConfigError,
    Driver,
    Error,
    LoadError,
    Operation,
    Plugin,
    Region,
    RowResult,
    RowStatus,
    __version__,
    block_keys,
    load,
    resume_bound,
)



class _Waker:
    """Wakes every coroutine awaiting an operation of one driver, on one
    event loop, when the driver's completion descriptor becomes readable.
    The descriptor is watched only while someone awaits, so a descriptor
    number reused after its driver closed is never watched stale."""

    def __init__(self, loop, fd):
        self._loop, self._fd, self._waiters = loop, fd, []

    def next(self):
        """A future set at the next announcement (or at once, when one is
        pending in the descriptor)."""
        future = self._loop.create_future()
        if not self._waiters:
            self._loop.add_reader(self._fd, self._readable)
        self._waiters.append(future)
        return future

    def forget(self, future):
        if future in self._waiters:
            self._waiters.remove(future)
            if not self._waiters:
                self._loop.remove_reader(self._fd)

    def _readable(self):
        try:
            os.read(self._fd, 8)  # resets the eventfd's count
        except BlockingIOError:
            pass
        waiters, self._waiters = self._waiters, []
        self._loop.remove_reader(self._fd)
        for future in waiters:
            if not future.done():
                future.set_result(None)


_wakers = weakref.WeakKeyDictionary()  # loop -> {fd: _Waker}, gone with the loop


def _waker(loop, fd):
    by_fd = _wakers.setdefault(loop, {})
    waker = by_fd.get(fd)
    if waker is None:
        waker = by_fd[fd] = _Waker(loop, fd)
    return waker


async def _settle(op, timeout=None):
    """True once op is settled; False when timeout (seconds) passes first."""
    if op.settled:  # a driver that completes inside the call: no loop turn at all
        return True
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    fd = op.completion_fd
    pause = 0.0001
    while True:
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            return op.settled
        if fd < 0:
            # Not announced (an ABI 1.0 driver): poll with growing pauses.
            await asyncio.sleep(pause if left is None else min(pause, left))
            pause = min(pause * 2, 0.01)
        else:
            waker = _waker(loop, fd)
            future = waker.next()
            # Asked after the future is registered: an announcement between
            # the two is read from the descriptor and sets the future.
            if op.settled:
                waker.forget(future)
                return True
            try:
                await asyncio.wait_for(future, left) if left is not None else await future
            except asyncio.TimeoutError:
                pass
            finally:
                waker.forget(future)
        if op.settled:
            return True


def _settle_method(self, timeout=None):
    """Awaitable: True once results are final and access is no longer open,
    False when timeout (seconds) passes first. Never blocks the loop."""
    return _settle(self, timeout)


async def _results_when_settled(op):
    await _settle(op)
    return op.results()


Operation.settle = _settle_method
Operation.__await__ = lambda self: _results_when_settled(self).__await__()

__all__ = [
    "Access", "CallError", "ConfigError", "Driver", "Error", "LoadError", "Operation", "Plugin", "Region",
    "RowResult", "RowStatus", "block_keys", "load", "resume_bound",
]
