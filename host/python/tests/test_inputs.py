"""What a Python engine hands the package: option values of every Python
type, and rows that are malformed. Each maps to what the driver expects or
is refused with a kvblob error that names what was wrong and where.

The spy driver (tests/fixtures/spy_driver.cpp, a driver for the host's own
tests) stages a final result that changes; KVBLOB_FIXTURE_DIR names its
folder (ctest sets it).
"""
import math
import os

import numpy as np
import pytest

import kvblob


def test_option_values_map_from_python_types():
    plugin = kvblob.load("memory")
    # bool -> "true"/"false": the memory driver parses hints as a boolean.
    with plugin.open({"hints": True, "store": "pytest-hints"}) as driver:
        assert "hints" in driver.capabilities["flags"]
    with plugin.open({"hints": False, "store": "pytest-hints"}) as driver:
        assert "hints" not in driver.capabilities["flags"]
    # int and integral float -> decimal; the driver parses them as counts.
    with plugin.open({"workers": 2, "max_rows": 16.0, "store": "pytest-ints"}) as driver:
        assert driver.capabilities["max_rows_per_op"] == 16
    # None means "not given": the driver's default applies.
    with plugin.open({"max_rows": None, "store": "pytest-none"}) as driver:
        assert driver.capabilities["max_rows_per_op"] == kvblob.load("memory").capabilities["max_rows_per_op"]


@pytest.mark.parametrize(
    "value, said",
    [
        ([1, 2], "a list is not an option value"),
        ({"a": 1}, "a dict is not an option value"),
        (b"raw", "a bytes is not an option value"),
        (math.nan, "is not a finite number"),
        (math.inf, "is not a finite number"),
    ],
)
def test_option_values_of_other_types_are_refused_naming_the_option(value, said):
    with pytest.raises(kvblob.CallError) as refused:
        kvblob.load("memory").open({"workers": value})
    assert refused.value.rule == "R-OPN-1"
    assert "option 'workers'" in str(refused.value) and said in str(refused.value)


def test_an_option_name_that_is_not_a_str_is_refused():
    with pytest.raises(kvblob.CallError) as refused:
        kvblob.load("memory").open({3: "x"})
    assert refused.value.rule == "R-OPN-1" and "must be a str, not int" in str(refused.value)


def test_a_fractional_float_reaches_the_driver_as_python_writes_it():
    # The memory driver takes no fractional option: its refusal quotes the text it got.
    with pytest.raises(kvblob.LoadError) as refused:
        kvblob.load("memory").open({"workers": 2.5})
    assert "2.5" in str(refused.value)


@pytest.mark.parametrize(
    "row, said",
    [
        (42, "row 1: expected (key, region, offset, length)"),
        ((7, None, 0, 64), "row 1: the key must be bytes or str, not int"),
        (("k", "not a region", 0, 64), "row 1: a span's region must be a kvblob.Region"),
        (("k", "REGION", -4, 64), "row 1: the span's offset -4 is negative"),
        (("k", "REGION", 0, "64"), "row 1: the span's length must be a non-negative int, not str"),
        (("k", "REGION", 0, True), "row 1: the span's length must be a non-negative int, not bool"),
        (("k", "REGION", 2**70, 64), "row 1: the span's offset 1180591620717411303424 does not fit in 64 bits"),
        (("k", "REGION", 0), "row 1: expected (key, region, offset, length)"),
        (("k", [("REGION", 0)]), "row 1: a span is (region, offset, length)"),
        (("k", "REGION-list"), "row 1: the spans must be a list of (region, offset, length)"),
    ],
)
def test_a_malformed_row_names_the_row_and_what_was_expected(row, said):
    buf = np.zeros(4096, dtype=np.uint8)
    with kvblob.load("memory").open({"store": "pytest-rows"}) as driver:
        region = driver.register(buf)

        def fill(x):
            if x == "REGION":
                return region
            if x == "REGION-list":
                return region  # a region where the list of spans belongs
            if isinstance(x, tuple):
                return tuple(fill(v) for v in x)
            if isinstance(x, list):
                return [fill(v) for v in x]
            return x

        good = ("fine", region, 0, 64)
        with pytest.raises(kvblob.CallError) as refused:
            driver.put([good, fill(row)])
        assert said in str(refused.value)
        assert refused.value.rule.startswith("R-ADM-")
        assert "Unable to cast" not in str(refused.value)
        # numpy integers serve as offsets and lengths; lists serve as rows.
        op = driver.put([["fine", region, np.int64(0), np.uint32(64)]])
        assert op.wait(10) and op.results()[0].status == kvblob.RowStatus.READY
        assert op.release() == "KVBLOB_OK"
        region.close()


def test_a_malformed_probe_key_names_the_row():
    with kvblob.load("memory").open({"store": "pytest-probe"}) as driver:
        with pytest.raises(kvblob.CallError) as refused:
            driver.probe(["a", 3.5])
        assert "row 1: " in str(refused.value) and "float" in str(refused.value)


def test_a_final_result_never_changes_and_the_message_says_the_driver_tried(spy):
    # results=change: the spy answers READY, then DECLINED for the same final row.
    buf = np.zeros(4096, dtype=np.uint8)
    with spy.open({"results": "change"}) as driver:
        region = driver.register(buf)
        op = driver.get([("k", region, 0, 64)])
        assert op.wait(10)
        first = op.results()
        again = op.results()  # asks the host again: the host holds the first answer
        assert first[0].status == again[0].status == kvblob.RowStatus.READY
        assert "R-ROW-1" in again[0].message and "the first stands" in again[0].message
        assert op.release() == "KVBLOB_OK"
        # After release the last final answer is still readable; nothing reaches the driver.
        assert op.results()[0].status == kvblob.RowStatus.READY
        with pytest.raises(kvblob.CallError) as dead:
            op.poll()
        assert dead.value.rule == "R-OPS-1"
        region.close()


def test_a_hostile_config_file_is_refused_with_its_line(tmp_path):
    # 50,000 dotted parts once killed the interpreter (a stack overflow in the
    # TOML parser); a FIFO was "no such file" (and must not block).
    config = tmp_path / "engine.toml"
    config.write_text('[driver]\nname = "memory"\n[driver.options]\n' + ".".join(["a"] * 50000) + " = 1\n")
    with pytest.raises(kvblob.ConfigError) as deep:
        kvblob.load(str(config))
    assert deep.value.line == 4 and "dotted parts" in str(deep.value)
    config.write_text('[driver]\npath = "libkvblob_memory.so\\u0000.txt"\n')
    with pytest.raises(kvblob.ConfigError) as nul:
        kvblob.load(str(config))
    assert nul.value.line == 2 and "NUL" in str(nul.value)
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(kvblob.ConfigError, match="is a FIFO"):
        kvblob.load(str(fifo))
