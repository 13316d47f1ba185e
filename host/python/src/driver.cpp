#include "driver.hpp"

#include "kvblob/host/capabilities.hpp"

namespace kvblob::python {

namespace py = pybind11;

py::dict capabilities_of(const kvblob_caps_t &caps)
{
    py::dict d;
    py::list flags;
    for (const auto &name : capability_names(caps.flags)) flags.append(name);
    d["flags"] = flags;
    d["max_rows_per_op"] = caps.max_rows_per_op;
    d["max_spans_per_row"] = caps.max_spans_per_row;
    d["max_key_bytes"] = caps.max_key_bytes;
    d["max_object_bytes"] = caps.max_object_bytes;
    d["max_ops_in_flight"] = caps.max_ops_in_flight;
    return d;
}

void bind_driver(py::module_ &m)
{
    py::class_<PyDriver, std::shared_ptr<PyDriver>>(m, "Driver")
        .def_property_readonly("name", [](PyDriver &d) { return d.get().name(); })
        .def_property_readonly("capabilities", [](PyDriver &d) { return capabilities_of(d.get().caps()); })
        .def_property_readonly("completion_fd", [](PyDriver &d) { return d.get().completion_fd(); },
                               "Readable whenever the driver announces one of its operations (ABI 1.1 notify); "
                               "-1 when it does not notify. Owned by the driver: never close it")
        .def("register", &PyDriver::register_buffer, py::arg("buffer"),
             "Registers a writable, C-contiguous buffer (bytearray, numpy array, memoryview) as HOST memory")
        .def("register_pointer", &PyDriver::register_pointer, py::arg("address"), py::arg("size"),
             py::arg("device") = py::none(), py::arg("owner") = py::none(),
             "Registers raw memory: DEVICE memory on an ordinal when device is given (a tensor's data_ptr()); "
             "owner is kept alive with the region")
        .def("put", [](PyDriver &d, const py::iterable &rows) { return d.submit(OpKind::put, rows); })
        .def("get", [](PyDriver &d, const py::iterable &rows) { return d.submit(OpKind::get, rows); })
        .def("probe", [](PyDriver &d, const py::iterable &keys) { return d.submit(OpKind::probe, keys); })
        .def("remove", [](PyDriver &d, const py::iterable &keys) { return d.submit(OpKind::remove, keys); })
        .def("drain", [](PyDriver &d, std::optional<double> timeout) {
            Driver &drv = d.get();
            const auto ms = to_ms(timeout.value_or(30.0));
            py::gil_scoped_release nogil;
            return std::string(kvblob_status_name(drv.drain(ms)));
        }, py::arg("timeout") = py::none())
        .def_property_readonly("_serial", [](const PyDriver &d) { return d.serial; })
        // Wrapped in kvblob/__init__.py (close, __exit__), which also ends
        // every asyncio task awaiting one of the driver's operations.
        .def("_close", &PyDriver::close, py::arg("timeout") = py::none())
        .def("__enter__", [](std::shared_ptr<PyDriver> d) { return d; });
}

}  // namespace kvblob::python
