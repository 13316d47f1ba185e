// The module's exceptions: Error, and CallError, LoadError and ConfigError
// beneath it, each carrying the rule (and stage, file or line) the host named.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace kvblob::python {

void bind_errors(pybind11::module_ &m);

}  // namespace kvblob::python
