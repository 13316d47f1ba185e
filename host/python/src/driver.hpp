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
        {
            py::gil_scoped_release nogil;
            r->region = d.register_region(desc);
        }
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
        {
            py::gil_scoped_release nogil;
            r->region = d.register_region(desc);
        }
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
    std::shared_ptr<PyOperation> submit(OpKind kind, py::handle rows)
    {
        auto op = std::make_shared<PyOperation>();
        op->driver_serial = serial;
        const bool moves_bytes = kind == OpKind::put || kind == OpKind::get;
        const char *shape = moves_bytes ? "(key, region, offset, length) or (key, [(region, offset, length), ...])"
                                        : "a key (bytes or str)";
        SubmitScratch::Lease scratch;
        auto &keys = scratch->keys;    // alive until submit returns: the rows point into them
        auto &out = scratch->rows;
        auto &spans = scratch->spans;  // every row's, in order; a row's count is its span_count
        const bool exact = PyList_CheckExact(rows.ptr()) || PyTuple_CheckExact(rows.ptr());
        if (exact) {
            keys.reserve(Py_SIZE(rows.ptr()));
            out.reserve(Py_SIZE(rows.ptr()));
            if (moves_bytes) spans.reserve(Py_SIZE(rows.ptr()));
        }
        size_t index = 0;
        auto add_key = [&](const py::handle &key) {
            const std::string_view bytes = key_view(key, index);
            keys.push_back(py::reinterpret_borrow<py::object>(key));
            out.push_back({sizeof(kvblob_row_t), 0, reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
                           nullptr});
        };
        // Span after span mostly names the same region: it is looked up (and
        // added to the operation's) only when it changes. The last one is
        // held here, so that no other object can take its address meanwhile.
        py::object last_region;
        PyRegion *region_of_last = nullptr;
        auto span_of = [&](const py::handle &region, const py::handle &offset, const py::handle &length) {
            if (!region.is(last_region)) {
                const std::shared_ptr<PyRegion> *r = region_instances.holds(region.ptr())
                                                         ? region_instances.holder(region.ptr())
                                                         : nullptr;
                if (!r || !*r)
                    bad_row(index, "R-ADM-6", "a span's region must be a kvblob.Region (from Driver.register), not " +
                                                  type_name(region));
                if (std::find(op->regions.begin(), op->regions.end(), *r) == op->regions.end())
                    op->regions.push_back(*r);
                last_region = py::reinterpret_borrow<py::object>(region);
                region_of_last = r->get();
            }
            if (!region_of_last->region) bad_row(index, "R-ADM-6", "a span names a region that was closed");
            const uint64_t off = span_number(offset, index, "offset"), len = span_number(length, index, "length");
            spans.push_back(make_span(region_of_last->region.handle(), off, len));
            ++out.back().span_count;
        };
        auto add_row = [&](const py::handle &row) {
            // The usual row, (key, region, offset, length) in a tuple: read in place.
            if (moves_bytes && PyTuple_CheckExact(row.ptr()) && PyTuple_GET_SIZE(row.ptr()) == 4) {
                add_key(PyTuple_GET_ITEM(row.ptr(), 0));
                span_of(PyTuple_GET_ITEM(row.ptr(), 1), PyTuple_GET_ITEM(row.ptr(), 2), PyTuple_GET_ITEM(row.ptr(), 3));
                ++index;
                return;
            }
            if (!moves_bytes || PyBytes_Check(row.ptr()) || PyUnicode_Check(row.ptr())) {
                if (is_fields(row) && Fields(row).size() == 1) add_key(Fields(row)[0]);
                else if (PyBytes_Check(row.ptr()) || PyUnicode_Check(row.ptr())) add_key(row);
                else bad_row(index, "R-ADM-4", std::string("expected ") + shape + ", got a " + type_name(row));
                ++index;
                return;
            }
            if (!is_fields(row)) bad_row(index, "R-ADM-6", std::string("expected ") + shape + ", got a " + type_name(row));
            const Fields t(row);
            if (t.size() == 0) bad_row(index, "R-ADM-6", std::string("expected ") + shape + ", got an empty " + type_name(row));
            add_key(t[0]);
            if (t.size() == 4) {
                span_of(t[1], t[2], t[3]);
            } else if (t.size() == 2) {
                const py::object list = t[1];
                if (!is_fields(list))
                    bad_row(index, "R-ADM-6", "the spans must be a list of (region, offset, length), not a " +
                                                  type_name(list));
                for (const auto &sp : list) {
                    if (!is_fields(sp) || py::len(sp) != 3)
                        bad_row(index, "R-ADM-6", "a span is (region, offset, length), not " +
                                                      std::string(py::repr(sp)));
                    const Fields st(sp);
                    span_of(st[0], st[1], st[2]);
                }
            } else if (t.size() != 1) {
                bad_row(index, "R-ADM-6", std::string("expected ") + shape + ", got " + std::to_string(t.size()) +
                                              " fields");
            }
            ++index;
        };
        if (exact) {
            // Each row held while read: an __index__ of its own may change the list.
            for (Py_ssize_t i = 0; i < Py_SIZE(rows.ptr()); ++i)
                add_row(py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(rows.ptr(), i)));
        } else {
            for (const auto &row : rows) add_row(row);
        }
        // The spans are all read: each row points at its own.
        size_t first = 0;
        for (auto &row : out) {
            row.spans = row.span_count ? spans.data() + first : nullptr;
            first += row.span_count;
        }
        const kvblob_batch_t batch{sizeof(kvblob_batch_t), 0, out.data(), out.size(), nullptr};
        Driver &d = get();
        {
            py::gil_scoped_release nogil;
            op->op = d.submit(kind, batch);
        }
        operations.add(op);
        return op;
    }

    std::string close(std::optional<double> timeout)
    {
        if (!driver) return kvblob_status_name(KVBLOB_OK);
        // Operations first (their regions stay referenced), then regions: a
        // registration the driver still refuses is pinned, its memory kept.
        operations.end_each([](PyOperation &op) { op.end(); });
        regions.end_each([](PyRegion &r) { r.close(); });
        kvblob_status st;
        {
            py::gil_scoped_release nogil;
            st = driver->shutdown(to_ms(timeout.value_or(30.0)));
        }
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
