#!/usr/bin/env python3
"""A real Prometheus server scrapes kvblob-engine's /metrics.

    prometheus_scrapes_engine.py KVBLOB_ENGINE CONFIG.toml

Starts Debian's prometheus in a temporary folder with a 1 s scrape interval
pointed at `kvblob-engine --metrics-listen` on a loopback port, runs the
engine's workload for a few seconds while Prometheus scrapes it, and, once
the engine has written its final metrics (--metrics-out) and says it is
still serving, asks Prometheus' HTTP API (/api/v1/query) until its newest
scrape agrees: kvblob_rows_total and the get histogram's count must equal
what the engine wrote. Prometheus must have scraped at least three times,
and seen the counters move while the workload ran. Both processes are
started and stopped here.

Exit 0 passed, 1 failed, 77 skipped (no prometheus binary: scripts/install-deps
installs it).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

DEADLINE_S = 240  # for every wait below: a starved machine is slow, not wrong


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(what, check, deadline):
    """Polls check() until it returns something true; fails at deadline."""
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def read_line_matching(proc, pattern, deadline, seen):
    """Reads proc's stdout until a line matches pattern (a signal the program gives)."""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"kvblob-engine ended (exit {proc.wait()}) before printing {pattern!r}:\n" + "".join(seen))
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"no line matching {pattern!r}")


def query(web, promql):
    url = f"http://{web}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as r:
        answer = json.load(r)
    assert answer["status"] == "success", answer
    return [(s["metric"], float(s["value"][1])) for s in answer["data"]["result"]]


def scalar(web, promql):
    result = query(web, promql)
    return result[0][1] if result else None


def total(page, family, **labels):
    """The sum of family's samples in an exposition page whose labels include labels."""
    out = 0.0
    for line in page.splitlines():
        if not line.startswith(family + "{"):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            out += float(line.rsplit(" ", 1)[1])
    return out


def start_prometheus(tmp, engine_port):
    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: kvblob\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{engine_port}']\n")
    for _ in range(5):  # a port taken between free_port() and the bind: another
        web = f"127.0.0.1:{free_port()}"
        log = open(os.path.join(tmp, "prometheus.log"), "w")
        proc = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp}/data",
                                 f"--web.listen-address={web}"], stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        deadline = time.monotonic() + DEADLINE_S

        def ready():
            if proc.poll() is not None:
                return "ended"
            try:
                with urllib.request.urlopen(f"http://{web}/-/ready", timeout=2) as r:
                    return "ready" if r.status == 200 else None
            except OSError:
                return None

        if until("prometheus to be ready", ready, deadline) == "ready":
            return proc, web
    raise AssertionError("prometheus did not start:\n" + open(os.path.join(tmp, "prometheus.log")).read())


def stop(proc):
    if proc and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main():
    engine_bin, config_src = sys.argv[1], sys.argv[2]
    if not shutil.which("prometheus"):
        print("SKIP: no prometheus binary (Debian's prometheus package; scripts/install-deps installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="kvblob-prometheus.")
    prometheus = engine = None
    seen = []
    try:
        # The engine's port, chosen first so Prometheus can be told it and be
        # ready before the workload starts.
        for _ in range(5):
            engine_port = free_port()
            out_file = os.path.join(tmp, "engine.prom")
            if prometheus is None:
                prometheus, web = start_prometheus(tmp, engine_port)
                # Prometheus applies a new target a few seconds after it is
                # ready: the workload starts once it has tried the engine's
                # port (up == 0, nothing listens yet), so it scrapes the run.
                until("Prometheus to try the engine's port", lambda: query(web, 'up{job="kvblob"}'),
                      time.monotonic() + DEADLINE_S)
            engine = subprocess.Popen([engine_bin, "--config", config_src, "--duration", "8",
                                       "--metrics-listen", f"127.0.0.1:{engine_port}", "--metrics-linger",
                                       "--metrics-out", out_file], stdout=subprocess.PIPE, text=True,
                                      start_new_session=True)
            first = engine.stdout.readline()
            if first.startswith("metrics: serving"):
                seen.append(first)
                break
            engine.wait()
            stop(prometheus)  # its config names the port that was taken: a new one for both
            prometheus = None
        else:
            raise AssertionError("no free port for the engine in five tries")
        deadline = time.monotonic() + DEADLINE_S
        read_line_matching(engine, r"^verified: every delivered block", deadline, seen)
        read_line_matching(engine, r"^metrics: still serving", deadline, seen)
        page = open(out_file).read()
        rows = total(page, "kvblob_rows_total")
        gets = total(page, "kvblob_operation_seconds_count", kind="get")
        ready_get_rows = total(page, "kvblob_rows_total", kind="get", result="READY")
        assert rows > 0 and gets > 0, page
        print(f"the engine wrote: kvblob_rows_total {rows:.0f}, get histogram count {gets:.0f}, "
              f"READY get rows {ready_get_rows:.0f}")

        until("Prometheus' newest scrape to agree with the engine's final metrics",
              lambda: scalar(web, 'sum(kvblob_rows_total{job="kvblob"})') == rows
              and scalar(web, 'sum(kvblob_operation_seconds_count{job="kvblob",kind="get"})') == gets,
              deadline)
        assert scalar(web, 'sum(kvblob_rows_total{job="kvblob",kind="get",result="READY"})') == ready_get_rows
        # The label the config chose reached every series.
        labels = {m.get("label") for m, _ in query(web, 'kvblob_rows_total{job="kvblob"}')}
        assert labels == {"engine-demo"}, labels
        scrapes = scalar(web, 'sum_over_time(up{job="kvblob"}[1h])')  # the scrapes that succeeded
        assert scrapes is not None and scrapes >= 3, f"Prometheus scraped {scrapes} times"
        # Seen moving: a scrape during the workload held fewer rows than the end.
        lowest = scalar(web, 'min_over_time(sum(kvblob_rows_total{job="kvblob"})[1h:1s])')
        assert lowest is not None and lowest < rows, f"the counters never moved between scrapes ({lowest} .. {rows})"
        print(f"PASS: Prometheus scraped {scrapes:.0f} times, saw kvblob_rows_total go from {lowest:.0f} to "
              f"{rows:.0f}, and agrees with the engine")
        engine.send_signal(signal.SIGTERM)
        code = engine.wait(timeout=60)
        assert code == 0, f"kvblob-engine ended with {code} on SIGTERM"
        return 0
    except AssertionError as e:
        print("FAIL:", e)
        print("engine said:\n" + "".join(seen))
        log = os.path.join(tmp, "prometheus.log")
        if os.path.exists(log):
            print("prometheus said (last lines):\n" + "".join(open(log).readlines()[-20:]))
        return 1
    finally:
        stop(engine)
        stop(prometheus)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
