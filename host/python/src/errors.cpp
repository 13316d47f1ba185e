#include "errors.hpp"

#include <stdexcept>

#include "kvblob/host/config.hpp"
#include "kvblob/host/load_error.hpp"
#include "kvblob/host/types.hpp"

namespace kvblob::python {

namespace py = pybind11;

void bind_errors(py::module_ &m)
{
    // Errors: every refusal names its rule.
    static py::exception<std::runtime_error> error(m, "Error");
    static py::exception<CallError> call_error(m, "CallError", error.ptr());
    static py::exception<LoadError> load_error(m, "LoadError", error.ptr());
    static py::exception<ConfigError> config_error(m, "ConfigError", error.ptr());
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const CallError &e) {
            py::object exc = py::reinterpret_borrow<py::object>(call_error.ptr())(e.what());
            exc.attr("rule") = e.rule();
            exc.attr("status") = std::string(kvblob_status_name(e.status()));
            exc.attr("refused") = e.refused();
            PyErr_SetObject(call_error.ptr(), exc.ptr());
        } catch (const LoadError &e) {
            py::object exc = py::reinterpret_borrow<py::object>(load_error.ptr())(e.what());
            exc.attr("rule") = e.rule();
            exc.attr("stage") = std::string(to_string(e.stage()));
            exc.attr("file") = e.file();
            PyErr_SetObject(load_error.ptr(), exc.ptr());
        } catch (const ConfigError &e) {
            py::object exc = py::reinterpret_borrow<py::object>(config_error.ptr())(e.what());
            exc.attr("file") = e.file().string();
            exc.attr("line") = e.line();
            PyErr_SetObject(config_error.ptr(), exc.ptr());
        }
    });
}

void set_python_error() noexcept
{
    try {
        throw;
    } catch (py::error_already_set &e) {
        e.restore();
    } catch (...) {
        // The order pybind's dispatcher asks them in: module-local, then global
        // (where register_exception_translator put the module's, before pybind's default).
        if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators))
            return;
        if (py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators))
            return;
        PyErr_SetString(PyExc_SystemError, "kvblob: an exception escaped every translator");
    }
}

}  // namespace kvblob::python
