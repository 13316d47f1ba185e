// What the host counts for each open driver, as Python dicts, and the
// Prometheus text of it (kvblob.prometheus turns that into a collector).
#pragma once

#include <pybind11/pybind11.h>

#include "kvblob/host/metrics.hpp"

namespace kvblob::python {

namespace py = pybind11;

// A snapshot as a dict of plain numbers (docs/metrics.md, "From Python").
py::dict metrics_dict(const MetricsSnapshot &snapshot);

// metrics_of_open_drivers and prometheus_text.
void bind_metrics(py::module_ &m);

}  // namespace kvblob::python
