// An opened driver as Python holds it: what it handed out (so that close can
// end it all first), and submit, which builds a batch from Python rows with
// no copy per row.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conversions.hpp"
#include "gil.hpp"
#include "instances.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/host/driver.hpp"
#include "operation.hpp"
#include "region.hpp"

namespace kvblob::python {

namespace py = pybind11;

// The vectors a submit builds its batch in, kept by each thread from one
// submit to the next. A submit that starts while its thread's are in use (a
// driver's call back into Python that submits again) gets its own.
struct SubmitScratch {
    std::vector<py::object> keys;  // emptied before the GIL is let go of for good
    std::vector<kvblob_row_t> rows;
    std::vector<kvblob_span_t> spans;
    bool in_use = false;

    class Lease {
    public:
        Lease() : Lease(kept()) {}
        // With the GIL held (the keys are Python's): every submit's ends there.
        ~Lease()
        {
            s_.keys.clear();
            s_.rows.clear();
            s_.spans.clear();
            s_.in_use = false;
        }
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        SubmitScratch *operator->() { return &s_; }

    private:
        explicit Lease(SubmitScratch &kept)
            : own_(kept.in_use ? std::make_unique<SubmitScratch>() : nullptr), s_(own_ ? *own_ : kept)
        {
            s_.in_use = true;
        }
        // Asked once per submit: a thread_local in a shared library costs a call to find.
        static SubmitScratch &kept()
        {
            thread_local SubmitScratch s;
            return s;
        }
        std::unique_ptr<SubmitScratch> own_;
        SubmitScratch &s_;
    };
};

struct PyDriver {
    std::unique_ptr<Driver> driver;
    // Unique in the process, never reused (unlike a descriptor number): names
    // this driver to asyncio's wakers (kvblob/__init__.py), also once closed.
    const uint64_t serial = next_serial();
    static uint64_t next_serial()
    {
        static std::atomic<uint64_t> last{0};
        return ++last;
    }
    // What this driver handed out, so that close can end it all first: a
    // with-block closes its driver even while Python still holds regions
    // and operations.
    template <class T>
    class Handed {
    public:
        // The entries of objects gone are swept out once the list has
        // doubled since the last sweep: constant time per add, amortised.
        // A sweep at every add made each submit cost a look at every
        // operation still alive (a put took 19.8 us with 10,000 held, 1.1
        // with none).
        void add(const std::shared_ptr<T> &item)
        {
            constexpr size_t never_below = 64;  // entries: too few to be worth a sweep
            if (items_.size() >= std::max(2 * live_at_sweep_, never_below)) {
                std::erase_if(items_, [](const std::weak_ptr<T> &w) { return w.expired(); });
                live_at_sweep_ = items_.size();
            }
            items_.push_back(item);
        }
        // Each object still alive, once, taken off the list first: end may
        // let go of the GIL, and another thread's add must not land in the
        // vector being walked.
        template <class F>
        void end_each(F &&end)
        {
            std::vector<std::weak_ptr<T>> items = std::move(items_);
            items_.clear();
            live_at_sweep_ = 0;
            for (auto &w : items)
                if (auto item = w.lock()) end(*item);
        }

    private:
        std::vector<std::weak_ptr<T>> items_;
        size_t live_at_sweep_ = 0;
    };
    Handed<PyRegion> regions;
    Handed<PyOperation> operations;

    Driver &get()
    {
        if (!driver) throw py::value_error("the driver is closed");
        return *driver;
    }

    std::shared_ptr<PyRegion> register_buffer(py::buffer buffer)
    {
        auto r = std::make_shared<PyRegion>();
        r->view = std::make_unique<py::buffer_info>(buffer.request(true));  // writable: gets write into it
        if (r->view->size * r->view->itemsize == 0) throw py::value_error("cannot register an empty buffer");
        bool contiguous = true;
        py::ssize_t expect = r->view->itemsize;
        for (size_t d = r->view->ndim; d-- > 0;) {
            if (r->view->strides[d] != expect) contiguous = false;
            expect *= r->view->shape[d];
        }
        if (!contiguous) throw py::value_error("only C-contiguous buffers can be registered");
        r->owner = buffer;
        r->size = static_cast<uint64_t>(r->view->size * r->view->itemsize);
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, r->view->ptr, r->size, 0, 0};
        Driver &d = get();
        r->region = without_gil([&] { return d.register_region(desc); });
        regions.add(r);
        return r;
    }

    std::shared_ptr<PyRegion> register_pointer(uint64_t address, uint64_t size, std::optional<int> device,
                                              py::object owner)
    {
        auto r = std::make_shared<PyRegion>();
        r->owner = std::move(owner);
        r->size = size;
        r->kind = device ? KVBLOB_MEMORY_DEVICE : KVBLOB_MEMORY_HOST;
        r->device = device.value_or(0);
        kvblob_region_desc_t desc{sizeof desc, r->kind, reinterpret_cast<void *>(address), size, r->device, 0};
        Driver &d = get();
        r->region = without_gil([&] { return d.register_region(desc); });
        regions.add(r);
        return r;
    }

    // rows: (key, [(region, offset, length), ...]) or (key, region, offset, length);
    // probe and remove take bare keys. Lists serve as well as tuples, and
    // any iterable as well as a list. A malformed row is refused naming its
    // index and what was expected.
    //
    // The batch points into the Python objects themselves (a key's bytes, a
    // str's UTF-8), held here until the driver has it: no copy per row. The
    // vectors the batch is built in are this thread's, kept from one submit
    // to the next (SubmitScratch): no allocation per call either.
    std::shared_ptr<PyOperation> submit(OpKind kind, py::handle rows);  // driver.cpp

    std::string close(std::optional<double> timeout)
    {
        if (!driver) return kvblob_status_name(KVBLOB_OK);
        // Operations first (their regions stay referenced), then regions: a
        // registration the driver still refuses is pinned, its memory kept.
        operations.end_each([](PyOperation &op) { op.end(); });
        regions.end_each([](PyRegion &r) { r.close(); });
        const kvblob_status st = without_gil([&] { return driver->shutdown(to_ms(timeout.value_or(30.0))); });
        // What could not end (say access unprovable) the host has logged and
        // keeps alive for the life of the process: never freed.
        driver.reset();
        return std::string(kvblob_status_name(st));  // what could not end stays alive inside the host, never freed
    }
};

// A driver's capabilities as a dict (flags by name, limits by field).
py::dict capabilities_of(const kvblob_caps_t &caps);

inline Instances<PyDriver> driver_instances;  // bound with Driver (bind_driver)

void bind_driver(py::module_ &m);

}  // namespace kvblob::python
