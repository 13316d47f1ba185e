#!/usr/bin/python3
"""An asyncio engine: publishes several requests' KV-cache blocks at once,
then fetches them back, awaiting each operation instead of blocking a thread
on it. A driver that announces completions (ABI 1.1 notify) wakes the event
loop through its completion descriptor; the loop polls nothing.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/await_operations.py [DRIVER_OR_CONFIG] [OPTION=VALUE...]

The default is the memory driver completing in its worker threads
(mode=background), so every await really waits.
"""
import asyncio
import sys

import numpy as np

import kvblob

TOKENS_PER_BLOCK = 16
BLOCK_BYTES = 16 * 1024
REQUESTS = 8
BLOCKS_PER_REQUEST = 4


async def publish_then_fetch(driver, request, published, fetched, src, dst):
    """One request: its blocks out to the store, then back into fetched."""
    tokens = list(range(request * 1000, request * 1000 + BLOCKS_PER_REQUEST * TOKENS_PER_BLOCK))
    keys = kvblob.block_keys("await-example", tokens, TOKENS_PER_BLOCK, salt=f"request-{request}")
    first = request * BLOCKS_PER_REQUEST
    put = driver.put([(k, src, (first + i) * BLOCK_BYTES, BLOCK_BYTES) for i, k in enumerate(keys)])
    stored = await put  # results, once final and access ended
    assert all(r.status == kvblob.RowStatus.READY for r in stored), stored
    put.release()
    get = driver.get([(k, dst, (first + i) * BLOCK_BYTES, BLOCK_BYTES) for i, k in enumerate(keys)])
    assert await get.settle(timeout=30), "the get did not settle within 30 s"
    bound = kvblob.resume_bound(get.results())
    get.release()
    driver.remove(keys).wait()  # a persistent store (file, redis) can run this again
    return bound


async def main():
    spec = sys.argv[1] if len(sys.argv) > 1 else "memory"
    options = dict(word.split("=", 1) for word in sys.argv[2:])
    if spec == "memory" and not options:
        options = {"mode": "background", "store": "await-example"}
    plugin = kvblob.load(spec)
    with plugin.open(options) as driver:
        notifies = "notify" in driver.capabilities["flags"]
        print(f"driver {plugin.name}: {'announces completions' if notifies else 'polled (no notify)'}, "
              f"completion fd {driver.completion_fd}")
        blocks = REQUESTS * BLOCKS_PER_REQUEST
        published = np.random.default_rng(1).integers(0, 256, size=(blocks, BLOCK_BYTES), dtype=np.uint8)
        fetched = np.zeros_like(published)
        src, dst = driver.register(published), driver.register(fetched)
        bounds = await asyncio.gather(
            *(publish_then_fetch(driver, r, published, fetched, src, dst) for r in range(REQUESTS)))
        assert bounds == [BLOCKS_PER_REQUEST] * REQUESTS, bounds
        assert np.array_equal(fetched, published), "a fetched block differs from what was published"
        print(f"awaited {2 * REQUESTS} operations of {REQUESTS} requests at once; "
              f"verified {blocks} blocks")


if __name__ == "__main__":
    asyncio.run(main())
