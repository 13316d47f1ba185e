#!/usr/bin/python3
"""What the Python package adds to an operation over the C++ host, in one run.

Both sides drive the null driver (bench/null_driver: it completes every
operation inside the call and moves no bytes), so what is left is the host
and, on the Python side, the binding. Each side times every operation alone
as an engine makes it (submit, wait until settled, read every row's status,
release) and reports the median: kvblob-bench (run as a child, --json) for
C++, this loop for Python. Python reads the statuses two ways, each timed
on its own: in one call (`op.count(RowStatus.READY)`, the loop in C++ as
kvblob-bench's is) and row by row (`for r in op.results()`, the loop in
Python).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py --bench build/bin/kvblob-bench \
        [--batches 1,32] [--seconds 0.5] [--json]

The goal is at most 1 us added per operation (at batch 32, issue 32); the
table says each figure and whether the goal is met, for each way of reading. It asserts nothing about speed: a loaded
machine slows both sides.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

import kvblob

ROW_BYTES = 64
GOAL_NS_PER_OP = 1000


def python_ns_per_op(driver, region, batch, seconds, read):
    """Median time of one put as an engine makes it, and as kvblob-bench
    times it in C++: submit, wait until settled, read every row's status
    (read: "count" in one call, "rows" one RowResult at a time), release."""
    rows = [(f"python-overhead/{i}", region, i * ROW_BYTES, ROW_BYTES) for i in range(batch)]
    ready = kvblob.RowStatus.READY
    clock = time.perf_counter_ns
    # What reading the clock itself costs, taken off every sample.
    clock_cost = statistics.median(-(clock() - clock()) for _ in range(1001))
    samples = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples) < 100:
        start = clock()
        op = driver.put(rows)
        op.wait()
        if read == "count":
            unexpected = batch - op.count(ready)
        else:
            unexpected = 0
            for result in op.results():
                if result.status != ready:
                    unexpected += 1
        released = op.release()
        samples.append(clock() - start - clock_cost)
        if unexpected or released != "KVBLOB_OK":
            raise SystemExit(f"python_overhead: {unexpected} rows not READY, release answered {released}")
    return statistics.median(samples)


def cxx_ns_per_op(bench, batch, seconds):
    """kvblob-bench's median operation, submit to release, at this batch."""
    out = subprocess.run([bench, "--driver", "null", "--sizes", str(ROW_BYTES), "--batch", str(batch), "--ops", "put",
                          "--duration", str(seconds), "--statistic", "median", "--json"],
                         check=True, capture_output=True, text=True).stdout
    point = json.loads(out)["points"][0]
    return point["driver"]["complete_us"]["p50"] * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True, help="the kvblob-bench binary")
    parser.add_argument("--batches", default="1,32", help="rows per operation, comma-separated")
    parser.add_argument("--seconds", type=float, default=0.5, help="time per point, each side")
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    args = parser.parse_args()
    try:
        batches = [int(b) for b in args.batches.split(",")]
        if any(b < 1 or b > 100000 for b in batches) or not args.seconds > 0 or args.seconds > 600:
            raise ValueError
    except ValueError:
        print("python_overhead: --batches takes 1..100000, comma-separated; --seconds a number in (0, 600]",
              file=sys.stderr)
        return 2

    plugin = kvblob.load("null")
    with plugin.open({}) as driver:
        memory = np.zeros(max(batches) * ROW_BYTES, dtype=np.uint8)
        region = driver.register(memory)
        figures = []
        for batch in batches:
            cxx_ns = cxx_ns_per_op(args.bench, batch, args.seconds)
            for read in ("count", "rows"):
                python_ns = python_ns_per_op(driver, region, batch, args.seconds, read)
                added = python_ns - cxx_ns
                figures.append({"batch": batch, "read": read, "python_ns_per_op": round(python_ns, 1),
                                "cxx_ns_per_op": round(cxx_ns, 1), "added_ns_per_op": round(added, 1),
                                "added_ns_per_row": round(added / batch, 1), "goal_ns_per_op": GOAL_NS_PER_OP,
                                "goal_met": added <= GOAL_NS_PER_OP})
        region.close()
    if args.json:
        for f in figures:
            print(json.dumps(f))
        return 0
    print(f"null driver, {ROW_BYTES}-byte rows, median operation of each side (submit, wait, every row's status, release);")
    print("python reads the statuses in one call (count) or one RowResult at a time (rows)")
    print(f"{'batch':>6} {'read':>6} {'python ns/op':>13} {'c++ ns/op':>10} {'added ns/op':>12} {'added ns/row':>13}  goal <= {GOAL_NS_PER_OP / 1000:g} us/op")
    for f in figures:
        print(f"{f['batch']:>6} {f['read']:>6} {f['python_ns_per_op']:>13.0f} {f['cxx_ns_per_op']:>10.0f} "
              f"{f['added_ns_per_op']:>12.0f} {f['added_ns_per_row']:>13.1f}  {'met' if f['goal_met'] else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
