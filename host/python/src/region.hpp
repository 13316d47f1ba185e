// A registration as Python holds it: the region, and the object whose memory
// it is, kept alive while the driver may touch it.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "gil.hpp"
#include "instances.hpp"
#include "kvblob/host/driver.hpp"

namespace kvblob::python {

namespace py = pybind11;

struct PyRegion {
    Region region;
    py::object owner;                         // the object whose memory this is
    std::unique_ptr<py::buffer_info> view;    // holds the buffer export (no resize meanwhile)
    uint64_t size = 0;
    kvblob_memory_kind kind = KVBLOB_MEMORY_HOST;
    int device = 0;

    // Ends the registration; when the driver refuses, the memory is kept
    // alive for good (the host pins the registration).
    void close()
    {
        if (!region) return;
        const kvblob_status st = without_gil([&] { return region.unregister(); });
        if (st != KVBLOB_OK) {
            owner.release();  // deliberately never decremented: a driver may still touch it
            view.release();
        }
        owner = py::none();
        view.reset();
        Region pinned = std::move(region);  // its destructor pins, and says so in the log
    }
    ~PyRegion()
    {
        try {
            close();
        } catch (...) {
        }
    }
};

inline Instances<PyRegion> region_instances;  // bound with Region (bind_region): submit reads a row's region through it

void bind_region(py::module_ &m);

}  // namespace kvblob::python
