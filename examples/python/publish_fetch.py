#!/usr/bin/python3
"""Publishes a request's KV-cache blocks from a numpy array, then fetches
them back into another array as a second engine would, and prints how many
leading blocks the store gave back: the resume bound, where prefill
recomputes from.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/publish_fetch.py [DRIVER_OR_CONFIG]

DRIVER_OR_CONFIG is a driver name or path, or an engine config (*.toml);
the default is the memory driver.
"""
import sys

import numpy as np

import kvblob

TOKENS_PER_BLOCK = 16
BLOCK_BYTES = 64 * 1024  # one block's KV tensors, all layers


def main():
    spec = sys.argv[1] if len(sys.argv) > 1 else "memory"
    plugin = kvblob.load(spec)
    print(f"driver {plugin.name} {plugin.version} from {plugin.path}")

    tokens = list(range(8 * TOKENS_PER_BLOCK + 5))  # eight full blocks and a partial one
    keys = kvblob.block_keys("example-engine", tokens, TOKENS_PER_BLOCK, salt="model-7b/fp16")
    published = np.random.default_rng(0).integers(0, 256, size=(len(keys), BLOCK_BYTES), dtype=np.uint8)
    fetched = np.zeros_like(published)

    with plugin.open() as driver:
        src = driver.register(published)
        # The engine publishes only the first six blocks (say the rest were
        # evicted before it got to them).
        put = driver.put([(k, src, i * BLOCK_BYTES, BLOCK_BYTES) for i, k in enumerate(keys[:6])])
        put.wait()
        print("published:", [r.status.name for r in put.results()])

        dst = driver.register(fetched)
        get = driver.get([(k, dst, i * BLOCK_BYTES, BLOCK_BYTES) for i, k in enumerate(keys)])
        get.wait()
        results = get.results()
        bound = kvblob.resume_bound(results)
        print("fetched:  ", [r.status.name for r in results])
        print(f"resume bound: {bound} of {len(keys)} blocks; "
              f"recompute from token {bound * TOKENS_PER_BLOCK}")
        assert np.array_equal(fetched[:bound], published[:bound]), "a delivered block differs"
        print(f"verified: the {bound} delivered blocks match what was published")
        # Clean up so a persistent store (file, redis) can run this again.
        driver.remove(keys).wait()


if __name__ == "__main__":
    main()
