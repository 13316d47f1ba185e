"""Operations in asyncio: awaited through the driver's completion descriptor
when it announces completions (ABI 1.1 notify), polled otherwise, and
bounded by a timeout either way. Row messages are read when asked."""
import asyncio
import os

import pytest

import kvblob


def test_awaiting_many_operations_of_a_notifying_driver():
    async def run(driver, region):
        puts = [driver.put([(f"k{i}", region, i * 256, 256)]) for i in range(32)]
        results = await asyncio.gather(*puts)
        assert all(r[0].status == kvblob.RowStatus.READY for r in results)
        for op in puts:
            assert op.settled and op.release() == "KVBLOB_OK"
        gets = [driver.get([(f"k{i}", region, 8192 + i * 256, 256)]) for i in range(32)]
        assert all(await asyncio.gather(*(op.settle(timeout=30) for op in gets)))
        return [op.results()[0].status for op in gets]

    buf = bytearray(16384)
    buf[:8192] = bytes(range(256)) * 32
    with kvblob.load("memory").open({"mode": "background", "store": "pytest-asyncio"}) as driver:
        assert "notify" in driver.capabilities["flags"]
        assert driver.completion_fd >= 0
        region = driver.register(buf)
        statuses = asyncio.run(run(driver, region))
        assert statuses == [kvblob.RowStatus.READY] * 32
        assert buf[8192:] == buf[:8192]


@pytest.mark.parametrize("notify", ["1", "0"])
def test_an_operation_that_never_settles_times_out_without_blocking_the_loop(spy, notify):
    # access=manual: the spy keeps access open until its test hook ends it.
    buf = bytearray(4096)
    with spy.open({"access": "manual", "notify": notify}) as driver:
        assert (driver.completion_fd >= 0) == (notify == "1")
        region = driver.register(buf)
        op = driver.get([("k", region, 0, 64)])
        assert op.completion_fd == driver.completion_fd

        async def run():
            ticks = 0

            async def ticker():  # the loop keeps running while the operation is awaited
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.001)

            t = asyncio.ensure_future(ticker())
            settled = await op.settle(timeout=0.2)
            t.cancel()
            return settled, ticks

        settled, ticks = asyncio.run(run())
        assert not settled
        assert ticks > 1
        assert not op.settled


def test_results_read_each_message_only_when_asked(spy):
    # results=change: the spy answers READY, then DECLINED; the host keeps the
    # first answer and says so in the row's message, read when asked.
    buf = bytearray(4096)
    with spy.open({"results": "change"}) as driver:
        region = driver.register(buf)
        op = driver.get([("k", region, 0, 64)])
        assert op.wait(10)
        first = op.results()
        again = op.results()
        assert again[0].status == kvblob.RowStatus.READY
        assert "R-ROW-1" in again[0].message
        assert again[0].message == again[0].message  # kept once read
        assert op.release() == "KVBLOB_OK"
        assert again[0].message.startswith("driver")  or "R-ROW-1" in again[0].message
        assert first[0].status == kvblob.RowStatus.READY


# ---- closing a driver while tasks await its operations (issue 30) ----------

def _ends_with_closed_error(outcomes):
    """Every outcome is the CallError close gives an awaiter (R-OPS-1)."""
    for outcome in outcomes:
        assert isinstance(outcome, kvblob.CallError), repr(outcome)
        assert outcome.rule == "R-OPS-1"
        assert "closed" in str(outcome)


def _loop_errors(loop):
    """What the loop would log (a reader's OSError, a callback that raised)."""
    seen = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    return seen


def test_close_ends_every_task_awaiting_its_operations():
    # Controlled mode: nothing moves until a test says, so all 100 wait on the
    # driver's descriptor when close comes (a plain close, on the loop).
    buf = bytearray(100 * 64)
    driver = kvblob.load("memory").open({"mode": "controlled", "store": "pytest-close-100"})
    assert driver.completion_fd >= 0
    region = driver.register(buf)
    ops = [driver.get([(f"k{i}", region, i * 64, 64)]) for i in range(100)]

    async def run():
        errors = _loop_errors(asyncio.get_running_loop())
        tasks = [asyncio.ensure_future(op.settle()) for op in ops[:50]]
        tasks += [asyncio.ensure_future(_awaited(op)) for op in ops[50:]]
        await asyncio.sleep(0)  # one turn: each task reaches its await
        assert not any(t.done() for t in tasks)
        assert driver.close() == "KVBLOB_OK"
        # A bound for a failure only (they used to stay pending for good).
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        # One awaiting after the close gets the same answer at once.
        late = await asyncio.gather(ops[0].settle(), return_exceptions=True)
        return outcomes, late, errors

    outcomes, late, errors = asyncio.run(run())
    _ends_with_closed_error(outcomes)
    assert isinstance(late[0], kvblob.CallError) and late[0].rule == "R-OPS-1"
    assert errors == []


async def _awaited(op):
    return await op


def test_close_with_a_timeout_on_another_thread_leaves_the_loop_clean(spy):
    # The spy keeps access open (access=manual), so close(0.5) cannot close:
    # it answers past its timeout while the awaiters' loop runs on.
    buf = bytearray(4096)
    driver = spy.open({"access": "manual", "notify": "1"})
    region = driver.register(buf)
    ops = [driver.get([(f"k{i}", region, i * 64, 64)]) for i in range(8)]

    async def run():
        loop = asyncio.get_running_loop()
        errors = _loop_errors(loop)
        tasks = [asyncio.ensure_future(op.settle()) for op in ops]
        await asyncio.sleep(0)
        assert not any(t.done() for t in tasks)
        status = await loop.run_in_executor(None, driver.close, 0.5)
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        return status, outcomes, errors

    status, outcomes, errors = asyncio.run(run())
    assert status != "KVBLOB_OK"  # access still open: the driver stays alive
    _ends_with_closed_error(outcomes)
    assert errors == []


def test_a_later_driver_on_the_same_descriptor_number_wakes_its_awaiters():
    buf = bytearray(4096)
    buf[:64] = bytes(range(64))

    async def run():
        errors = _loop_errors(asyncio.get_running_loop())
        first = kvblob.load("memory").open({"mode": "controlled", "store": "pytest-reuse-a"})
        fd = first.completion_fd
        op = first.get([("k", first.register(buf), 0, 64)])
        task = asyncio.ensure_future(op.settle())
        await asyncio.sleep(0)
        assert first.close() == "KVBLOB_OK"  # its descriptor is closed: the number is free
        first_outcome = await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 60)
        with kvblob.load("memory").open({"mode": "background", "store": "pytest-reuse-b",
                                                 "access_delay_ms": "300"}) as second:
            assert second.completion_fd == fd  # the case this test is about
            put = second.put([("k", second.register(buf), 0, 64)])
            results = await asyncio.wait_for(put, 60)
        return first_outcome, results, errors

    first_outcome, results, errors = asyncio.run(run())
    _ends_with_closed_error(first_outcome)
    assert results[0].status == kvblob.RowStatus.READY
    assert errors == []


def test_a_waker_holds_no_descriptor_once_nobody_awaits(spy):
    # Each waker watches a duplicate of the driver's descriptor while someone
    # awaits; loop after loop, awaiting and timing out leaves none behind.
    buf = bytearray(4096)
    with spy.open({"access": "manual", "notify": "1"}) as driver:
        region = driver.register(buf)
        op = driver.get([("k", region, 0, 64)])
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(20):
            assert asyncio.run(op.settle(timeout=0.001)) is False
        assert len(os.listdir("/proc/self/fd")) == before
