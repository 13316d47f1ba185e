#include "operation.hpp"

namespace kvblob::python {

namespace py = pybind11;

std::string MessageBook::read(uint64_t row)
{
    if (row >= text.size()) return {};
    if (text[row]) return *text[row];
    auto owner = op.lock();
    if (!owner || !owner->op.handle()) return {};  // released before anyone asked
    std::string m;
    {
        Operation &o = owner->op;
        py::gil_scoped_release nogil;
        m = o.message(row);
    }
    text[row] = m;
    return m;
}

void bind_operation(py::module_ &m)
{
    py::class_<PyOperation, std::shared_ptr<PyOperation>>(m, "Operation")
        .def("poll", [](PyOperation &o) {
            Operation &op = o.live();
            py::gil_scoped_release nogil;
            return op.is_final();
        }, "Whether every row has its final result")
        .def_property_readonly("access", [](PyOperation &o) {
            Operation &op = o.live();
            py::gil_scoped_release nogil;
            return static_cast<AccessState>(op.access());
        })
        .def("wait", &PyOperation::wait, py::arg("timeout") = py::none(),
             "Waits until results are final and access is no longer open; False on timeout")
        .def("results", &PyOperation::results)
        .def("count", &PyOperation::count, py::arg("status"),
             "How many rows have this status, asked like results() but without an object per row")
        .def_property_readonly("settled", &PyOperation::settled,
                               "Results final and access no longer open, asked without waiting")
        .def_property_readonly("completion_fd", [](const PyOperation &o) { return o.op.completion_fd(); },
                               "The driver's completion descriptor (readable when it announces an operation), "
                               "or -1 when the driver does not notify")
        .def("cancel", [](PyOperation &o) {
            Operation &op = o.live();
            py::gil_scoped_release nogil;
            return std::string(kvblob_status_name(op.cancel()));
        })
        .def("release", [](PyOperation &o) { return std::string(kvblob_status_name(o.release())); })
        .def_property_readonly("_driver_serial", [](const PyOperation &o) { return o.driver_serial; })
        .def("__len__", [](const PyOperation &o) { return o.op.row_count(); });
}

}  // namespace kvblob::python
