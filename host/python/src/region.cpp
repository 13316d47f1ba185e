#include "region.hpp"

namespace kvblob::python {

namespace py = pybind11;

void bind_region(py::module_ &m)
{
    py::class_<PyRegion, std::shared_ptr<PyRegion>>(m, "Region")
        .def_readonly("size", &PyRegion::size)
        .def_property_readonly("is_device", [](const PyRegion &r) { return r.kind == KVBLOB_MEMORY_DEVICE; })
        .def_property_readonly("registered", [](const PyRegion &r) { return static_cast<bool>(r.region); })
        .def("close", &PyRegion::close, "Unregisters now (an operation that names it keeps it alive until released)")
        .def("__enter__", [](std::shared_ptr<PyRegion> r) { return r; })
        .def("__exit__", [](PyRegion &r, py::args) { r.close(); });
    region_instances.bind();
}

}  // namespace kvblob::python
