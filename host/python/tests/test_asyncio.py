"""Operations in asyncio: awaited through the driver's completion descriptor
when it announces completions (ABI 1.1 notify), polled otherwise, and
bounded by a timeout either way. Row messages are read when asked."""
import asyncio
import os

import pytest

import kvblob


def spy():
    folder = os.environ.get("KVBLOB_FIXTURE_DIR")
    if not folder:
        pytest.fail("KVBLOB_FIXTURE_DIR must name the build's tests/fixtures folder (ctest sets it)")
    return kvblob.load(os.path.join(folder, "libkvblob_spy.so"))


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
def test_an_operation_that_never_settles_times_out_without_blocking_the_loop(notify):
    # access=manual: the spy keeps access open until its test hook ends it.
    buf = bytearray(4096)
    with spy().open({"access": "manual", "notify": notify}) as driver:
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


def test_results_read_each_message_only_when_asked():
    # results=change: the spy answers READY, then DECLINED; the host keeps the
    # first answer and says so in the row's message, read when asked.
    buf = bytearray(4096)
    with spy().open({"results": "change"}) as driver:
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
