"""The kvblob Python package against the bundled drivers.

Run from the build tree: PYTHONPATH=build/python python3 -m pytest host/python/tests
(ctest does). The Redis round trip runs when KVBLOB_REDIS_URL names a server
(tests/redis/with_redis.sh sets it) and says why it skips otherwise.
"""
import hashlib
import os
import struct
import threading
import weakref

import numpy as np
import pytest

import kvblob

BLOCK = 64 * 1024


def pattern(rows, size, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(rows, size), dtype=np.uint8)


def drivers(tmp_path):
    yield "memory", {"store": f"pytest-{os.getpid()}-{tmp_path.name}"}
    yield "file", {"root": str(tmp_path)}
    url = os.environ.get("KVBLOB_REDIS_URL")
    if url and "," not in url:
        yield "redis", {"url": url, "prefix": f"pytest-{os.getpid()}-{tmp_path.name}/"}


@pytest.mark.parametrize("name", ["memory", "file", "redis"])
def test_round_trip_from_numpy(tmp_path, name):
    options = dict(drivers(tmp_path)).get(name)
    if options is None:
        pytest.skip("needs a Redis server in KVBLOB_REDIS_URL (run through tests/redis/with_redis.sh single)")
    src = pattern(8, BLOCK, 1)
    dst = np.zeros_like(src)
    with kvblob.load(name).open(options) as driver:
        rs, rd = driver.register(src), driver.register(dst)
        keys = [f"block/{i}" for i in range(8)]
        put = driver.put([(k, rs, i * BLOCK, BLOCK) for i, k in enumerate(keys)])
        assert put.wait(30)
        assert [r.status for r in put.results()] == [kvblob.RowStatus.READY] * 8
        get = driver.get([(k, rd, i * BLOCK, BLOCK) for i, k in enumerate(keys)])
        assert get.wait(30)
        assert [r.status for r in get.results()] == [kvblob.RowStatus.READY] * 8
        assert get.access == kvblob.Access.ENDED
        assert np.array_equal(src, dst)
        miss = driver.get([("never-put", rd, 0, BLOCK)])
        assert miss.wait(30)
        assert miss.results()[0].status == kvblob.RowStatus.MISS
        for op in (put, get, miss):
            assert op.release() == "KVBLOB_OK"
        rs.close()
        rd.close()


def test_multi_span_rows_and_probe_and_remove():
    src = pattern(1, 3 * 4096, 2)
    dst = np.zeros_like(src)
    with kvblob.load("memory").open({"store": "pytest-spans"}) as driver:
        rs, rd = driver.register(src), driver.register(dst)
        spans_in = [(rs, i * 4096, 4096) for i in range(3)]
        spans_out = [(rd, (2 - i) * 4096, 4096) for i in range(3)]  # scattered the other way round
        assert driver.put([("k", spans_in)]).wait(10)
        got = driver.get([("k", spans_out)])
        assert got.wait(10) and got.results()[0].status == kvblob.RowStatus.READY
        for i in range(3):
            assert np.array_equal(src[0, i * 4096:(i + 1) * 4096], dst[0, (2 - i) * 4096:(3 - i) * 4096])
        probe = driver.probe(["k", b"absent"])
        assert probe.wait(10)
        assert [r.status for r in probe.results()] == [kvblob.RowStatus.READY, kvblob.RowStatus.MISS]
        removed = driver.remove(["k"])
        assert removed.wait(10) and removed.results()[0].status == kvblob.RowStatus.READY


def test_block_keys_by_sha256_or_xxh3():
    tokens = list(range(-8, 56))  # four blocks of 16, negative tokens too
    sha = kvblob.block_keys("engine", tokens, 16, salt="model-a")
    assert sha == kvblob.block_keys("engine", tokens, 16, salt="model-a", hash="sha256")
    chain = hashlib.sha256(b"model-a").digest()  # the chain, by hand: int32 little-endian tokens
    chain = hashlib.sha256(chain + struct.pack("<16i", *tokens[:16])).digest()
    assert sha[0] == "engine/v1/" + chain[:16].hex()
    xxh = kvblob.block_keys("engine", tokens, 16, salt="model-a", hash="xxh3")
    assert len(xxh) == 4 and all(k.startswith("engine-xxh3/v1/") for k in xxh)
    assert not set(xxh) & set(sha)
    with pytest.raises(ValueError, match="sha256, xxh3"):
        kvblob.block_keys("engine", tokens, 16, hash="md5")
    with pytest.raises(ValueError, match="names XXH3 block keys"):
        kvblob.block_keys("engine-xxh3", tokens, 16)


def test_block_sequence_and_resume_bound():
    tokens = list(range(5 * 16 + 3))  # five full blocks and a partial one
    keys = kvblob.block_keys("engine", tokens, 16, salt="model-a")
    assert len(keys) == 5
    assert kvblob.block_keys("engine", tokens[:32], 16, salt="model-a") == keys[:2]  # a shared prefix shares keys
    assert kvblob.block_keys("engine", tokens, 16, salt="model-b")[0] != keys[0]
    blocks = pattern(5, 4096, 3)
    out = np.zeros_like(blocks)
    with kvblob.load("memory").open({"store": "pytest-blocks"}) as driver:
        rb, ro = driver.register(blocks), driver.register(out)
        assert driver.put([(k, rb, i * 4096, 4096) for i, k in enumerate(keys[:3])]).wait(10)
        get = driver.get([(k, ro, i * 4096, 4096) for i, k in enumerate(keys)])
        assert get.wait(10)
        assert kvblob.resume_bound(get.results()) == 3
        assert np.array_equal(out[:3], blocks[:3])


def test_refusals_name_their_rule_stage_and_file(tmp_path):
    with pytest.raises(kvblob.LoadError) as missing:
        kvblob.load(str(tmp_path / "libkvblob_nothing.so"))
    assert missing.value.stage == "open" and "libkvblob_nothing.so" in missing.value.file
    assert missing.value.rule.startswith("R-LOAD-")

    with pytest.raises(kvblob.LoadError) as bad_option:
        kvblob.load("memory").open({"no_such_option": "1"})
    assert bad_option.value.stage == "init" and "no_such_option" in str(bad_option.value)

    config = tmp_path / "engine.toml"
    config.write_text("[driver]\nname = 42\n")
    with pytest.raises(kvblob.ConfigError) as bad_config:
        kvblob.load(str(config))
    assert bad_config.value.file == str(config) and bad_config.value.line == 2

    buf = np.zeros(4096, dtype=np.uint8)
    with kvblob.load("memory").open({"store": "pytest-refusals"}) as driver:
        region = driver.register(buf)
        with pytest.raises(kvblob.CallError) as out_of_bounds:
            driver.put([("k", region, 4000, 200)])
        assert out_of_bounds.value.rule.startswith("R-ADM-")
        with pytest.raises(kvblob.CallError) as device:
            driver.register_pointer(buf.ctypes.data, buf.nbytes, device=0, owner=buf)
        assert device.value.rule == "R-ADM-8"
        with pytest.raises(ValueError):
            driver.register(np.zeros((4, 4), dtype=np.uint8)[:, ::2])  # not contiguous
        region.close()
    assert issubclass(kvblob.CallError, kvblob.Error) and issubclass(kvblob.LoadError, kvblob.Error)


def test_config_file_picks_the_driver_and_its_options(tmp_path):
    config = tmp_path / "engine.toml"
    config.write_text('[driver]\nname = "file"\n\n[driver.options]\nroot = "%s"\n' % tmp_path)
    plugin = kvblob.load(str(config))
    assert plugin.name == "file"
    assert "probe" in plugin.capabilities["flags"]
    with plugin.open() as driver:
        assert driver.name == "file"


def test_memory_stays_alive_while_an_operation_holds_it():
    src = pattern(1, 1 << 20, 4)
    with kvblob.load("memory").open({"store": "pytest-alive"}) as driver:
        rs = driver.register(src)
        assert driver.put([("big", rs, 0, 1 << 20)]).wait(10)
        dst = np.zeros(1 << 20, dtype=np.uint8)
        alive = weakref.ref(dst)
        region = driver.register(dst)
        op = driver.get([("big", region, 0, 1 << 20)])
        # The engine drops its own references at once; the operation keeps
        # the region, and the region the array.
        del dst, region
        assert alive() is not None
        assert op.wait(10)
        assert np.array_equal(alive(), src[0])
        assert op.release() == "KVBLOB_OK"
        del op
        assert alive() is None  # released, unregistered, and freed


def test_threads_get_while_another_drains():
    src = pattern(16, 16384, 5)
    with kvblob.load("memory").open({"store": "pytest-threads", "workers": "2"}) as driver:
        rs = driver.register(src)
        assert driver.put([(f"t/{i}", rs, i * 16384, 16384) for i in range(16)]).wait(10)
        delivered, refused, wrong, registered = [0], [0], [0], [0]
        lock = threading.Lock()

        def reader(seed):
            dst = np.zeros_like(src)
            rd = driver.register(dst)
            with lock:
                registered[0] += 1
            while True:
                try:
                    op = driver.get([(f"t/{i}", rd, i * 16384, 16384) for i in range(16)])
                except kvblob.CallError:
                    with lock:
                        refused[0] += 1
                    break
                op.wait(10)
                ok = all(r.status == kvblob.RowStatus.READY for r in op.results()) and np.array_equal(dst, src)
                with lock:
                    delivered[0] += 1
                    wrong[0] += not ok
                op.release()
                dst[:] = 0
            rd.close()

        threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        # The readers make progress while this thread waits: the GIL is
        # released inside the driver calls. Every reader registered first: a
        # get now runs in its reader's own thread when no worker took it, so
        # 20 deliveries can come before the last reader started.
        while True:
            with lock:
                if delivered[0] >= 20 and registered[0] == 4:
                    break
        assert driver.drain(10) == "KVBLOB_OK"
        for t in threads:
            t.join(30)
        assert refused[0] == 4 and wrong[0] == 0 and delivered[0] >= 20
