"""Metrics from Python: Driver.metrics() as a dict, and kvblob.prometheus'
collector read back through prometheus_client's own parser.

The collector's test skips, saying why, where python3-prometheus-client is
not installed (scripts/install-deps installs it); `import kvblob` never needs
it, which a subprocess checks with the module hidden.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import kvblob

BLOCK = 4096


def open_memory(tmp_path, label):
    return kvblob.load("memory").open({"store": f"metrics-{os.getpid()}-{tmp_path.name}"}, metrics_label=label)


def test_driver_metrics_count_rows_bytes_and_refusals(tmp_path):
    src = np.full((3, BLOCK), 7, dtype=np.uint8)
    dst = np.zeros_like(src)
    with open_memory(tmp_path, "py-counted") as driver:
        rs, rd = driver.register(src), driver.register(dst)
        put = driver.put([(f"k{i}", rs, i * BLOCK, BLOCK) for i in range(3)])
        assert put.wait(30)
        get = driver.get([("k0", rd, 0, BLOCK), ("absent", rd, BLOCK, BLOCK)])
        assert get.wait(30)
        with pytest.raises(kvblob.CallError) as refused:
            driver.put([("k" * 100000, rs, 0, BLOCK)])
        # Rows are counted when a final operation's results are first read
        # (or at its release, when they never were).
        assert driver.metrics()["kinds"]["put"]["rows"]["READY"] == 0
        put.results(), get.results()
        m = driver.metrics()
        assert m["driver"] == "memory" and m["label"] == "py-counted"
        assert m["kinds"]["put"]["submitted"] == 2
        assert m["kinds"]["put"]["refused"] == {refused.value.rule: 1}
        assert m["kinds"]["put"]["rows"]["READY"] == 3
        assert m["kinds"]["put"]["ready_bytes"] == 3 * BLOCK
        assert m["kinds"]["get"]["rows"]["READY"] == 1
        assert m["kinds"]["get"]["rows"]["MISS"] == 1
        assert m["kinds"]["get"]["ready_bytes"] == BLOCK
        assert m["kinds"]["get"]["until_final"]["count"] == 1
        assert sum(m["kinds"]["get"]["until_final"]["buckets"]) == 1
        assert m["regions"] == 2 and m["region_bytes"] == 2 * src.nbytes
        assert m["ops_in_flight"] == 2
        put.release(), get.release()
        assert driver.metrics()["ops_in_flight"] == 0
        assert any(d["label"] == "py-counted" for d in kvblob.metrics_of_open_drivers())
        rs.close(), rd.close()
    assert not any(d["label"] == "py-counted" for d in kvblob.metrics_of_open_drivers())


def test_a_bad_label_is_refused_before_the_driver_opens(tmp_path):
    with pytest.raises(ValueError, match="control character 0x1b"):
        open_memory(tmp_path, "\x1b[31mred")


def test_collector_reads_back_through_prometheus_client(tmp_path):
    prometheus_client = pytest.importorskip(
        "prometheus_client", reason="needs python3-prometheus-client (scripts/install-deps installs it)")
    from prometheus_client.parser import text_string_to_metric_families

    import kvblob.prometheus

    label = 'py "quoted"\nlabel'
    registry = prometheus_client.CollectorRegistry()
    registry.register(kvblob.prometheus.KvblobCollector())
    src = np.full((2, BLOCK), 1, dtype=np.uint8)
    with open_memory(tmp_path, label) as driver:
        region = driver.register(src)
        op = driver.put([(f"c{i}", region, i * BLOCK, BLOCK) for i in range(2)])
        assert op.wait(30)
        op.release()
        page = prometheus_client.generate_latest(registry).decode()
        families = {f.name: f for f in text_string_to_metric_families(page)}
        rows = [s for s in families["kvblob_rows"].samples
                if s.labels.get("label") == label and s.labels["kind"] == "put" and s.labels["result"] == "READY"]
        assert [s.value for s in rows] == [2.0]
        assert families["kvblob_rows"].type == "counter"
        histogram = families["kvblob_operation_seconds"]
        assert histogram.type == "histogram"
        count = [s.value for s in histogram.samples
                 if s.name == "kvblob_operation_seconds_count" and s.labels.get("label") == label
                 and s.labels["kind"] == "put"]
        assert count == [1.0]
        region.close()


def test_import_kvblob_needs_no_prometheus_client():
    # prometheus_client made unimportable: kvblob itself still imports.
    code = ("import sys; sys.modules['prometheus_client'] = None; import kvblob; "
            "print('imported', kvblob.prometheus_text().startswith('# HELP'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "imported True"
