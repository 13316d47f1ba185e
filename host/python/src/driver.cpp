#include "driver.hpp"

#include "errors.hpp"
#include "metrics.hpp"
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

namespace {

// put, get, probe and remove: an engine calls one per batch, so each is a
// CPython method of its own (METH_O) rather than a pybind function, whose
// dispatch would cost more than reading a batch of rows does.
template <OpKind kind>
PyObject *submit_method(PyObject *self, PyObject *rows)
{
    return guarded([&] {
        const std::shared_ptr<PyDriver> *driver = driver_instances.holder(self);
        if (!driver || !*driver) throw py::type_error("this Driver was not opened (Plugin.open makes them)");
        return wrap_operation((*driver)->submit(kind, rows));
    });
}

PyMethodDef submit_methods[] = {
    {"put", submit_method<OpKind::put>, METH_O,
     "put($self, rows, /)\n--\n\n"
     "Stores each row's bytes under its key. rows: an iterable of (key, region, offset, length) or "
     "(key, [(region, offset, length), ...]); a key is bytes or str. Returns the admitted Operation"},
    {"get", submit_method<OpKind::get>, METH_O,
     "get($self, rows, /)\n--\n\n"
     "Reads each row's object into its spans; rows as for put. Returns the admitted Operation"},
    {"probe", submit_method<OpKind::probe>, METH_O,
     "probe($self, keys, /)\n--\n\nWhether each key is stored (READY) or not (MISS). Returns the admitted Operation"},
    {"remove", submit_method<OpKind::remove>, METH_O,
     "remove($self, keys, /)\n--\n\nRemoves each key's object. Returns the admitted Operation"},
};

}  // namespace

void bind_driver(py::module_ &m)
{
    py::class_<PyDriver, std::shared_ptr<PyDriver>> driver(m, "Driver");
    driver
        .def_property_readonly("name", [](PyDriver &d) { return d.get().name(); })
        .def_property_readonly("capabilities", [](PyDriver &d) { return capabilities_of(d.get().caps()); })
        .def("metrics", [](PyDriver &d) { return metrics_dict(d.get().metrics()); },
             "What the host has counted for this driver since it opened, as a dict (docs/metrics.md)")
        .def_property_readonly("completion_fd", [](PyDriver &d) { return d.get().completion_fd(); },
                               "Readable whenever the driver announces one of its operations (ABI 1.1 notify); "
                               "-1 when it does not notify. Owned by the driver: never close it")
        .def("register", &PyDriver::register_buffer, py::arg("buffer"),
             "Registers a writable, C-contiguous buffer (bytearray, numpy array, memoryview) as HOST memory")
        .def("register_pointer", &PyDriver::register_pointer, py::arg("address"), py::arg("size"),
             py::arg("device") = py::none(), py::arg("owner") = py::none(),
             "Registers raw memory: DEVICE memory on an ordinal when device is given (a tensor's data_ptr()); "
             "owner is kept alive with the region")
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
    driver_instances.bind();
    auto *type = reinterpret_cast<PyTypeObject *>(driver.ptr());
    for (PyMethodDef &method : submit_methods) {
        auto descriptor = py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, &method));
        if (!descriptor) throw py::error_already_set();
        driver.attr(method.ml_name) = descriptor;
    }
}

}  // namespace kvblob::python
