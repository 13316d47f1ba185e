"""Rows in every shape the package takes reach the driver alike, and results
read the same whatever was done with the operation since.

Tuples and lists are read in place, anything else (a tuple's subclass, a
generator) through the sequence protocol, and a row's region is looked up
when it differs from the last row's: each way is driven here, and what the
driver stored is read back to the byte.
"""
import collections
import gc
import os

import numpy as np
import pytest

import kvblob

SIZE = 256
Span = collections.namedtuple("Span", "region offset length")
Row = collections.namedtuple("Row", "key region offset length")


class Spans(list):
    """A list of spans that answers through its own __getitem__."""

    def __getitem__(self, i):
        return list.__getitem__(self, i)


def test_rows_of_every_shape_store_the_same_bytes(tmp_path):
    src_a = np.arange(8 * SIZE, dtype=np.uint32).astype(np.uint8)
    src_b = (np.arange(8 * SIZE, dtype=np.uint32) * 7).astype(np.uint8)
    with kvblob.load("memory").open({"store": f"pytest-rows-{os.getpid()}-{tmp_path.name}"}) as driver:
        a, b = driver.register(src_a), driver.register(src_b)
        # Regions alternate row by row, and inside a row's spans.
        rows = [
            ("tuple", a, 0, SIZE),
            ["list", b, SIZE, SIZE],
            Row("namedtuple", a, 2 * SIZE, SIZE),
            (b"bytes-key", b, 3 * SIZE, SIZE),
            ("spans", [(a, 4 * SIZE, SIZE // 2), [b, 4 * SIZE, SIZE // 2], Span(a, 5 * SIZE, SIZE)]),
            ("spans-subclass", Spans([(b, 6 * SIZE, SIZE), (a, 7 * SIZE, SIZE)])),
        ]
        put = driver.put(row for row in rows)  # a generator, not a list
        assert put.wait(10)
        assert [r.status for r in put.results()] == [kvblob.RowStatus.READY] * len(rows)
        assert put.release() == "KVBLOB_OK"

        expected = {
            "tuple": src_a[0:SIZE],
            "list": src_b[SIZE:2 * SIZE],
            "namedtuple": src_a[2 * SIZE:3 * SIZE],
            b"bytes-key": src_b[3 * SIZE:4 * SIZE],
            "spans": np.concatenate([src_a[4 * SIZE:4 * SIZE + SIZE // 2], src_b[4 * SIZE:4 * SIZE + SIZE // 2],
                                     src_a[5 * SIZE:6 * SIZE]]),
            "spans-subclass": np.concatenate([src_b[6 * SIZE:7 * SIZE], src_a[7 * SIZE:8 * SIZE]]),
        }
        dst = np.zeros(2 * SIZE * len(expected), dtype=np.uint8)
        d = driver.register(dst)
        keys = list(expected)
        get = driver.get(tuple((k, d, i * 2 * SIZE, len(expected[k])) for i, k in enumerate(keys)))
        assert get.wait(10)
        assert [r.status for r in get.results()] == [kvblob.RowStatus.READY] * len(keys)
        for i, k in enumerate(keys):
            assert np.array_equal(dst[i * 2 * SIZE:i * 2 * SIZE + len(expected[k])], expected[k]), k
        assert get.release() == "KVBLOB_OK"
        for region in (a, b, d):
            region.close()


def test_a_closed_region_is_refused_even_when_the_row_before_named_it():
    buf = np.zeros(4096, dtype=np.uint8)
    with kvblob.load("memory").open({"store": f"pytest-closed-{os.getpid()}"}) as driver:
        region, other = driver.register(buf), driver.register(np.zeros(64, dtype=np.uint8))
        other.close()
        with pytest.raises(kvblob.CallError) as refused:
            driver.put([("a", region, 0, 64), ("b", other, 0, 64)])
        assert "row 1: a span names a region that was closed" in str(refused.value)
        region.close()
        with pytest.raises(kvblob.CallError) as refused:
            driver.put([("a", region, 0, 64)])
        assert "row 0: a span names a region that was closed" in str(refused.value)


def test_row_status_compares_as_it_always_did():
    ready, miss = kvblob.RowStatus.READY, kvblob.RowStatus.MISS
    assert ready == kvblob.RowStatus(1) and not (ready != kvblob.RowStatus(1))
    assert ready != miss and not (ready == miss)
    assert ready != 1 and not (ready == 1)  # a member is not its number
    assert ready != "READY" and ready != None  # noqa: E711
    assert hash(ready) == hash(kvblob.RowStatus(1))
    assert ready in (miss, kvblob.RowStatus(1))
    with pytest.raises(TypeError):
        ready < miss  # noqa: B015


def test_results_outlive_their_operation_and_driver():
    buf = np.zeros(4096, dtype=np.uint8)
    driver = kvblob.load("memory").open({"store": f"pytest-outlive-{os.getpid()}"})
    region = driver.register(buf)
    op = driver.put([("a", region, 0, 64), ("b", region, 64, 64)])
    assert op.wait(10)
    results = op.results()
    assert op.release() == "KVBLOB_OK"
    del op
    driver.close()
    del driver, region
    gc.collect()
    assert [(r.status, r.code, r.message) for r in results] == [(kvblob.RowStatus.READY, 0, "")] * 2
    assert repr(results[1]) == "RowResult(READY, code=0)"
    assert isinstance(results, list) and isinstance(results[0], kvblob.RowResult)
    assert kvblob.resume_bound(results) == 2


def test_row_results_come_only_from_results():
    with pytest.raises(TypeError):
        kvblob.RowResult()
    with pytest.raises(TypeError) as refused:
        kvblob.resume_bound([1, 2])
    assert "RowResult" in str(refused.value) and "int" in str(refused.value)


def test_count_agrees_with_results_and_outlives_release():
    buf = np.zeros(4096, dtype=np.uint8)
    with kvblob.load("memory").open({"store": f"pytest-count-{os.getpid()}"}) as driver:
        region = driver.register(buf)
        put = driver.put([("a", region, 0, 64), ("b", region, 64, 64)])
        assert put.wait(10)
        assert put.count(kvblob.RowStatus.READY) == 2 == len(put)
        assert put.release() == "KVBLOB_OK"
        get = driver.get([("a", region, 128, 64), ("absent", region, 192, 64), ("b", region, 256, 64)])
        assert get.wait(10)
        counts = {s: get.count(s) for s in kvblob.RowStatus.__members__.values()}
        assert counts == {s: [r.status for r in get.results()].count(s) for s in counts}
        assert (counts[kvblob.RowStatus.READY], counts[kvblob.RowStatus.MISS]) == (2, 1)
        assert get.release() == "KVBLOB_OK"
        # After release, from the last final results, as results() answers.
        assert (get.count(kvblob.RowStatus.READY), get.count(kvblob.RowStatus.MISS)) == (2, 1)
        with pytest.raises(TypeError):
            get.count(1)  # a RowStatus, not its number
        region.close()
