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
import threading
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
    metrics_of_open_drivers,
    prometheus_text,
    resume_bound,
)



class _Waker:
    """Wakes every coroutine awaiting an operation of one driver, on one
    event loop, when the driver's completion descriptor becomes readable.

    While someone awaits, it watches a duplicate of the descriptor, its own:
    the driver's close closes the original, and a later driver may get the
    same number, but the duplicate stays valid until the waker lets it go (no
    EBADF in the loop's reader, no stale registration). With no one
    awaiting it holds no descriptor. Wakers are found by the driver's
    serial, never by descriptor number, so a later driver's awaiters never
    wait on an earlier driver's descriptor. All but __init__ run on the
    loop's thread; next() runs under _wakers_lock (see _next_wake)."""

    def __init__(self, loop, fd):
        self._loop, self._driver_fd, self._fd, self._waiters = loop, fd, -1, []

    def next(self):
        """A future set at the next announcement (or at once, when one is
        pending in the descriptor)."""
        future = self._loop.create_future()
        if not self._waiters:
            self._fd = os.dup(self._driver_fd)
            self._loop.add_reader(self._fd, self._readable)
        self._waiters.append(future)
        return future

    def _let_go(self):
        if self._fd >= 0:
            if not self._loop.is_closed():
                self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1

    def forget(self, future):
        if future in self._waiters:
            self._waiters.remove(future)
            if not self._waiters:
                self._let_go()

    def _readable(self):
        try:
            os.read(self._fd, 8)  # resets the eventfd's count
        except BlockingIOError:
            pass
        waiters, self._waiters = self._waiters, []
        self._let_go()
        for future in waiters:
            if not future.done():
                future.set_result(None)

    def abandon(self, error):
        """The driver closed: every awaiter gets error, and the descriptor is
        let go. Runs on the loop's thread (or once the loop is closed)."""
        waiters, self._waiters = self._waiters, []
        self._let_go()
        for future in waiters:
            if not future.done():
                future.set_exception(error)


# loop -> {driver serial: _Waker}, gone with the loop. Guarded by _wakers_lock:
# a driver may be closed on any thread.
_wakers = weakref.WeakKeyDictionary()
_wakers_lock = threading.Lock()
_closed_serials = set()  # drivers closed: never given a waker again


def _closed_error(serial):
    error = CallError(
        f"[R-OPS-1] the driver (kvblob driver #{serial}) was closed while this operation was awaited: "
        "its handle is dead, and its results will never come")
    error.rule, error.status, error.refused = "R-OPS-1", "KVBLOB_E_INVALID", False
    return error


def _next_wake(loop, serial, fd):
    """The waker of driver serial on loop, and a future it sets at the next
    announcement. Under the lock close takes to mark the driver closed, so
    the descriptor is never duplicated after close began closing it."""
    with _wakers_lock:
        if serial in _closed_serials:
            raise _closed_error(serial)
        by_serial = _wakers.setdefault(loop, {})
        waker = by_serial.get(serial)
        if waker is None:
            waker = by_serial[serial] = _Waker(loop, fd)
        return waker, waker.next()


def _driver_closed(serial):
    """Ends every task awaiting an operation of the driver serial, on every
    loop: each raises CallError (R-OPS-1). On the loop's own thread this
    happens now; on another thread it is handed to the loop."""
    with _wakers_lock:
        _closed_serials.add(serial)
        wakers = [(loop, by_serial.pop(serial)) for loop, by_serial in list(_wakers.items()) if serial in by_serial]
    for loop, waker in wakers:
        error = _closed_error(serial)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop or loop.is_closed():
            waker.abandon(error)
            continue
        try:
            loop.call_soon_threadsafe(waker.abandon, error)
        except RuntimeError:  # closed meanwhile: nobody awaits there any more
            waker.abandon(error)


def _close(self, timeout=None):
    """Closes the driver: its operations are ended (an unsettled one is
    cancelled), its regions unregistered, then the driver drains for up to
    timeout seconds (default 30) and closes.

    What it waits for: the driver's drain (its operations final and their
    access ended), for timeout; a drain that ignores its own timeout is
    waited for 2 s more. Past that it returns the status that stopped it
    (KVBLOB_E_TIMEOUT) at once; what the driver may still touch (the driver,
    its unsettled operations, their regions and the buffers behind them)
    stays alive for the life of the process, never freed. Returns
    "KVBLOB_OK" once closed.

    Every asyncio task awaiting one of its operations (await op,
    op.settle()) ends with CallError (rule R-OPS-1), whichever thread calls
    close; a task that starts awaiting one afterwards gets the same."""
    # First: once marked, no awaiter duplicates the descriptor the close
    # below closes, and those awaiting now are told without waiting for the
    # drain.
    _driver_closed(self._serial)
    return self._close(timeout)


def _exit(self, *args):
    self.close()


Driver.close = _close
Driver.__exit__ = _exit


async def _settle(op, timeout=None):
    """True once op is settled; False when timeout (seconds) passes first."""
    if op.settled:  # a driver that completes inside the call: no loop turn at all
        return True
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    fd = op.completion_fd
    serial = op._driver_serial
    pause = 0.0001
    while True:
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            return op.settled
        if fd < 0:
            # Not announced (an ABI 1.0 driver): poll with growing pauses.
            # Once the driver closed, op.settled raises CallError.
            if serial in _closed_serials:
                raise _closed_error(serial)
            await asyncio.sleep(pause if left is None else min(pause, left))
            pause = min(pause * 2, 0.01)
        else:
            waker, future = _next_wake(loop, serial, fd)
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
    "RowResult", "RowStatus", "block_keys", "load", "metrics_of_open_drivers", "prometheus_text", "resume_bound",
]
