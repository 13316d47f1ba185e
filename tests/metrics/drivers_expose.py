#!/usr/bin/env python3
"""Every bundled driver's metrics, as kvblob-soak writes them: checked by
promtool and against what the soak itself counted.

    drivers_expose.py KVBLOB_SOAK FAKE_MOONCAKE_LIBRARY

Run under tests/redis/with_redis.sh (KVBLOB_REDIS_URL names its server). For
the memory, file, Redis and (fake) Mooncake drivers, a short soak writes its
metrics (--metrics-out) with a label full of quotes, backslashes and a line
feed; `promtool check metrics` (Debian's prometheus package) must pass the
page, and its counters must equal the soak's own tally: operations by kind,
one row per operation, READY gets, the bytes of READY puts and gets. Exit 0 passed, 1 failed, 77 skipped
(no promtool: scripts/install-deps installs it).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

LABEL = 'quote " back \\ line\nend'
ESCAPED = 'label="quote \\" back \\\\ line\\nend"'


def samples(page, family, **labels):
    out = 0.0
    for line in page.splitlines():
        if line.startswith(family + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            out += float(line.rsplit(" ", 1)[1])
    return out


def check(driver, options, soak_bin, tmp, env):
    page_file = os.path.join(tmp, driver + ".prom")
    args = [soak_bin, "--driver", driver, "--ops", "400", "--threads", "2", "--seconds", "120", "--json",
            "--metrics-out", page_file, "--metrics-label", LABEL]
    for o in options:
        args += ["-o", o]
    run = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    if run.returncode != 0:
        raise AssertionError(f"{driver}: kvblob-soak exited {run.returncode}:\n{run.stdout}{run.stderr}")
    tally = json.loads(run.stdout)
    page = open(page_file).read()
    lint = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True, timeout=60)
    if lint.returncode != 0 or lint.stdout.strip() or lint.stderr.strip():
        raise AssertionError(f"{driver}: promtool check metrics:\n{lint.stdout}{lint.stderr}")
    if ESCAPED not in page:
        raise AssertionError(f"{driver}: the label is not written escaped:\n{page[:2000]}")
    expected = {"put": tally["puts"], "get": tally["gets"], "probe": tally["probes"]}
    for kind, n in expected.items():
        submitted = samples(page, "kvblob_operations_submitted_total", kind=kind)
        rows = samples(page, "kvblob_rows_total", kind=kind)
        if tally["refused"] == 0 and submitted != n:
            raise AssertionError(f"{driver}: {n:.0f} {kind}s soaked, {submitted:.0f} counted as submitted")
        if rows != n:
            raise AssertionError(f"{driver}: {n:.0f} one-row {kind}s soaked, {rows:.0f} rows counted")
    for kind in ("put", "get"):
        counted, soaked = samples(page, "kvblob_ready_bytes_total", kind=kind), tally[f"ready_{kind}_bytes"]
        if counted != soaked:
            raise AssertionError(f"{driver}: {soaked} bytes in READY {kind} rows soaked, {counted:.0f} counted")
    ready = samples(page, "kvblob_rows_total", kind="get", result="READY")
    if ready != tally["ready_gets_verified"]:
        raise AssertionError(f"{driver}: {tally['ready_gets_verified']} READY gets verified, {ready:.0f} counted")
    if samples(page, "kvblob_operations_in_flight") != 0:
        raise AssertionError(f"{driver}: operations still counted in flight after the soak")
    print(f"{driver}: promtool passes; {tally['puts']} puts, {tally['gets']} gets ({ready:.0f} READY), "
          f"{tally['probes']} probes, {tally['ready_put_bytes']} and {tally['ready_get_bytes']} READY bytes, as counted")


def main():
    soak_bin, fake_mooncake = sys.argv[1], sys.argv[2]
    if not shutil.which("promtool"):
        print("SKIP: no promtool (Debian's prometheus package; scripts/install-deps installs it)")
        return 77
    redis_url = os.environ.get("KVBLOB_REDIS_URL")
    if not redis_url:
        print("FAIL: KVBLOB_REDIS_URL is not set: run under tests/redis/with_redis.sh")
        return 1
    tmp = tempfile.mkdtemp(prefix="kvblob-expose.")
    env = dict(os.environ, KVBLOB_FAKE_MOONCAKE_LEASE_MS="200")
    try:
        check("memory", ["store=expose"], soak_bin, tmp, env)
        os.mkdir(os.path.join(tmp, "files"))
        check("file", [f"root={tmp}/files"], soak_bin, tmp, env)
        check("redis", [f"url={redis_url}"], soak_bin, tmp, env)
        check("mooncake", [f"library={fake_mooncake}"], soak_bin, tmp, env)
        print("PASS: every bundled driver's metrics pass promtool and agree with the soak")
        return 0
    except AssertionError as e:
        print("FAIL:", e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
