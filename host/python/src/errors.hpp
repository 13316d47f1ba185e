// The module's exceptions: Error, and CallError, LoadError and ConfigError
// beneath it, each carrying the rule (and stage, file or line) the host named.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace kvblob::python {

void bind_errors(pybind11::module_ &m);

// For the methods written against CPython itself (the hot paths: submit,
// wait, count, results, release), which pybind's dispatcher does not wrap:
// sets the Python error for the C++ exception being handled, as that
// dispatcher would (a Python error restored, then the module's translators
// and pybind's own). Call it only inside a catch block.
void set_python_error() noexcept;

// body(), or nullptr with the Python error set when it throws.
template <class Body>
PyObject *guarded(Body &&body) noexcept
{
    try {
        return body();
    } catch (...) {
        set_python_error();
        return nullptr;
    }
}

}  // namespace kvblob::python
