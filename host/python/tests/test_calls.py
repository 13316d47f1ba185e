"""Operation, and Driver's put, get, probe and remove, are written against
CPython itself (the hot paths): their arguments are refused as Python's own
methods refuse them, the host's refusals arrive as kvblob errors naming the
rule, and a submit that starts while another is reading its rows (from a
generator of rows) builds its batch apart from it.
"""
import gc
import os
import weakref

import numpy as np
import pytest

import kvblob

SIZE = 64


@pytest.fixture
def store(tmp_path):
    with kvblob.load("memory").open({"store": f"pytest-calls-{os.getpid()}-{tmp_path.name}"}) as driver:
        buf = np.arange(16 * SIZE, dtype=np.uint32).astype(np.uint8)
        region = driver.register(buf)
        yield driver, region, buf
        region.close()


def test_arguments_are_refused_as_python_refuses_them(store):
    driver, region, _ = store
    with pytest.raises(TypeError):
        driver.put(5)  # not iterable
    with pytest.raises(TypeError):
        driver.put()
    with pytest.raises(TypeError):
        driver.put([("a", region, 0, SIZE)], [])
    op = driver.put([("a", region, 0, SIZE)])
    assert op.wait(10) is True
    assert op.wait(timeout=10) is True and op.wait(None) is True and op.wait(timeout=None) is True
    with pytest.raises(TypeError):
        op.wait("soon")
    with pytest.raises(TypeError):
        op.wait(1, 2)
    with pytest.raises(TypeError) as refused:
        op.wait(seconds=1)
    assert "seconds" in str(refused.value)
    with pytest.raises(ValueError) as refused:
        op.wait(-1)
    assert "timeout" in str(refused.value)
    with pytest.raises(TypeError):
        op.count()
    with pytest.raises(TypeError):
        op.results(1)
    with pytest.raises(TypeError):
        kvblob.Operation()
    assert op.release() == "KVBLOB_OK"


def test_the_host_refusals_carry_their_rule(store):
    driver, region, _ = store
    op = driver.put([("a", region, 0, SIZE)])
    assert op.wait(10) and op.release() == "KVBLOB_OK"
    assert op.release() == "KVBLOB_OK"  # released already
    for call in (op.wait, op.poll, op.cancel, lambda: op.settled, lambda: op.access):
        with pytest.raises(kvblob.CallError) as dead:
            call()
        assert dead.value.rule == "R-OPS-1" and dead.value.status == "KVBLOB_E_INVALID"
        assert not dead.value.refused  # not a submit's refusal
    with pytest.raises(kvblob.CallError) as refused:
        driver.put([("a", "not a region", 0, SIZE)])
    assert refused.value.rule == "R-ADM-6" and "row 0" in str(refused.value)
    assert refused.value.refused  # nothing in the batch was touched (R-ADM-1)
    with pytest.raises(kvblob.CallError) as host_refused:
        driver.put([("", region, 0, SIZE)])
    assert host_refused.value.rule == "R-ADM-4" and host_refused.value.refused


def test_an_operation_is_an_ordinary_python_object(store):
    driver, region, _ = store
    op = driver.probe(["a", b"b"])
    assert isinstance(op, kvblob.Operation) and len(op) == 2
    alive = weakref.ref(op)
    assert op.wait(10) and op.settled and op.access == kvblob.Access.ENDED and isinstance(op.poll(), bool)
    assert op.completion_fd == driver.completion_fd
    assert op.release() == "KVBLOB_OK"
    del op
    gc.collect()
    assert alive() is None
    # Operations freed are made again: each answers for its own rows.
    ops = [driver.probe([f"k{i}" for i in range(n)]) for n in range(1, 6)]
    assert [len(op) for op in ops] == [1, 2, 3, 4, 5]
    assert all(op.wait(10) and op.release() == "KVBLOB_OK" for op in ops)


def test_a_submit_inside_a_submit_builds_its_own_batch(store):
    driver, region, buf = store
    inner = []

    def rows():
        yield "outer-0", region, 0, SIZE
        # The outer put is reading its rows: this one must not take its batch.
        inner.append(driver.put([(f"inner-{i}", region, (8 + i) * SIZE, SIZE) for i in range(3)]))
        yield "outer-1", region, SIZE, SIZE
        yield "outer-2", region, 2 * SIZE, SIZE

    outer = driver.put(rows())
    for op, n in ((outer, 3), (inner[0], 3)):
        assert op.wait(10) and op.count(kvblob.RowStatus.READY) == n == len(op)
        assert op.release() == "KVBLOB_OK"
    dst = np.zeros(6 * SIZE, dtype=np.uint8)
    with driver.register(dst) as into:
        keys = ["outer-0", "outer-1", "outer-2", "inner-0", "inner-1", "inner-2"]
        get = driver.get([(k, into, i * SIZE, SIZE) for i, k in enumerate(keys)])
        assert get.wait(10) and get.count(kvblob.RowStatus.READY) == 6
        assert get.release() == "KVBLOB_OK"
    expected = np.concatenate([buf[0:3 * SIZE], buf[8 * SIZE:11 * SIZE]])
    assert np.array_equal(dst, expected)


@pytest.mark.parametrize("size", [2**15 + 3, 2**30 + 3, 2**31 + 3, 2**60 + 3, 2**62 + 3, 2**63 + 3])
def test_offsets_and_lengths_of_every_size_are_read_exactly(size):
    # Small ints are read from CPython's own layout, larger ones asked of it;
    # at each size the host must get the very number: the last byte of a
    # region of that size is inside it, the byte after is not. The null
    # driver (bench/null_driver) touches no byte, so the region's memory
    # need not exist.
    with kvblob.load("null").open({}) as driver:
        region = driver.register_pointer(4096, size)
        for offset, length in ((size - 1, 1), (0, size), (size - 2, 2)):
            op = driver.put([("k", region, offset, length)])
            assert op.wait(10) and op.count(kvblob.RowStatus.READY) == 1
            assert op.release() == "KVBLOB_OK"
        for offset, length in ((size, 1), (0, size + 1), (size - 1, 2)):
            with pytest.raises(kvblob.CallError) as refused:
                driver.put([("k", region, offset, length)])
            assert refused.value.rule == "R-ADM-6" and "not wholly inside its region" in str(refused.value)
        region.close()


def test_close_ends_every_operation_still_held_among_many_dropped(tmp_path):
    # The driver's list of the operations it handed out is swept of dropped
    # ones now and then, not at every submit: close still ends each one held.
    plugin = kvblob.load("memory")
    driver = plugin.open({"store": f"pytest-calls-held-{os.getpid()}-{tmp_path.name}"})
    buf = np.zeros(SIZE, dtype=np.uint8)
    region = driver.register(buf)
    held = []
    for i in range(1000):
        op = driver.put([(f"held-{i}", region, 0, SIZE)])
        assert op.wait(10)
        if i % 7 == 0:
            held.append(op)  # settled, never released: close's to end
        else:
            assert op.release() == "KVBLOB_OK"
        del op
    gc.collect()
    assert driver.close() == "KVBLOB_OK"
    for op in held:
        with pytest.raises(kvblob.CallError) as dead:
            op.poll()
        assert dead.value.rule == "R-OPS-1"
