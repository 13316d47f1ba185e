"""kvblob's metrics for an engine that already serves /metrics with prometheus_client.

    from prometheus_client import REGISTRY
    import kvblob.prometheus
    REGISTRY.register(kvblob.prometheus.KvblobCollector())

Every scrape then carries the kvblob_* series of each driver the process has
open (docs/metrics.md lists them). The collector reads the host's own
exposition and hands it to prometheus_client as metric families, so both
endpoints say the same thing. Importing kvblob itself never needs
prometheus_client; this module does.
"""
from prometheus_client.parser import text_string_to_metric_families

from . import prometheus_text


class KvblobCollector:
    """A prometheus_client collector of every open kvblob driver's metrics."""

    def collect(self):
        yield from text_string_to_metric_families(prometheus_text())

    def describe(self):
        # No families up front: drivers open and close while the registry
        # lives, and an empty describe makes the registry call collect()
        # only at scrape time.
        return []


__all__ = ["KvblobCollector"]
