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

// Reads Python rows into the batch a submit hands the host: each row's key
// and spans appended to the thread's scratch vectors (SubmitScratch), each
// span's region added to the operation's, once per change of region.
class BatchReader {
public:
    BatchReader(OpKind kind, PyOperation &op, SubmitScratch::Lease &scratch)
        : moves_bytes_(kind == OpKind::put || kind == OpKind::get),
          shape_(moves_bytes_ ? "(key, region, offset, length) or (key, [(region, offset, length), ...])"
                              : "a key (bytes or str)"),
          op_(op), keys_(scratch->keys), out_(scratch->rows), spans_(scratch->spans)
    {
    }

    void reserve(size_t rows)
    {
        keys_.reserve(rows);
        out_.reserve(rows);
        if (moves_bytes_) spans_.reserve(rows);
    }

    void add_row(const py::handle &row)
    {
        // The usual row, (key, region, offset, length) in a tuple: read in place.
        if (moves_bytes_ && PyTuple_CheckExact(row.ptr()) && PyTuple_GET_SIZE(row.ptr()) == 4) {
            add_key(PyTuple_GET_ITEM(row.ptr(), 0));
            add_span(PyTuple_GET_ITEM(row.ptr(), 1), PyTuple_GET_ITEM(row.ptr(), 2), PyTuple_GET_ITEM(row.ptr(), 3));
            ++index_;
            return;
        }
        if (!moves_bytes_ || PyBytes_Check(row.ptr()) || PyUnicode_Check(row.ptr())) {
            if (is_fields(row) && Fields(row).size() == 1) add_key(Fields(row)[0]);
            else if (PyBytes_Check(row.ptr()) || PyUnicode_Check(row.ptr())) add_key(row);
            else bad_row(index_, "R-ADM-4", std::string("expected ") + shape_ + ", got a " + type_name(row));
            ++index_;
            return;
        }
        add_fields(row);
        ++index_;
    }

    // The batch, once every row is read: each row points at its own spans.
    kvblob_batch_t batch()
    {
        size_t first = 0;
        for (auto &row : out_) {
            row.spans = row.span_count ? spans_.data() + first : nullptr;
            first += row.span_count;
        }
        return kvblob_batch_t{sizeof(kvblob_batch_t), 0, out_.data(), out_.size(), nullptr};
    }

private:
    // A row given as fields: (key,), (key, region, offset, length) or
    // (key, [(region, offset, length), ...]).
    void add_fields(const py::handle &row)
    {
        if (!is_fields(row)) bad_row(index_, "R-ADM-6", std::string("expected ") + shape_ + ", got a " + type_name(row));
        const Fields t(row);
        if (t.size() == 0) bad_row(index_, "R-ADM-6", std::string("expected ") + shape_ + ", got an empty " + type_name(row));
        add_key(t[0]);
        if (t.size() == 4) {
            add_span(t[1], t[2], t[3]);
        } else if (t.size() == 2) {
            const py::object list = t[1];
            if (!is_fields(list))
                bad_row(index_, "R-ADM-6", "the spans must be a list of (region, offset, length), not a " + type_name(list));
            for (const auto &sp : list) {
                if (!is_fields(sp) || py::len(sp) != 3)
                    bad_row(index_, "R-ADM-6", "a span is (region, offset, length), not " + std::string(py::repr(sp)));
                const Fields st(sp);
                add_span(st[0], st[1], st[2]);
            }
        } else if (t.size() != 1) {
            bad_row(index_, "R-ADM-6", std::string("expected ") + shape_ + ", got " + std::to_string(t.size()) + " fields");
        }
    }

    void add_key(const py::handle &key)
    {
        const std::string_view bytes = key_view(key, index_);
        keys_.push_back(py::reinterpret_borrow<py::object>(key));
        out_.push_back({sizeof(kvblob_row_t), 0, reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), nullptr});
    }

    // Span after span mostly names the same region: it is looked up (and
    // added to the operation's) only when it changes. The last one is held
    // here, so that no other object can take its address meanwhile.
    void add_span(const py::handle &region, const py::handle &offset, const py::handle &length)
    {
        if (!region.is(last_region_)) {
            const std::shared_ptr<PyRegion> *r =
                region_instances.holds(region.ptr()) ? region_instances.holder(region.ptr()) : nullptr;
            if (!r || !*r)
                bad_row(index_, "R-ADM-6",
                        "a span's region must be a kvblob.Region (from Driver.register), not " + type_name(region));
            if (std::find(op_.regions.begin(), op_.regions.end(), *r) == op_.regions.end()) op_.regions.push_back(*r);
            last_region_ = py::reinterpret_borrow<py::object>(region);
            region_of_last_ = r->get();
        }
        if (!region_of_last_->region) bad_row(index_, "R-ADM-6", "a span names a region that was closed");
        const uint64_t off = span_number(offset, index_, "offset"), len = span_number(length, index_, "length");
        spans_.push_back(make_span(region_of_last_->region.handle(), off, len));
        ++out_.back().span_count;
    }

    const bool moves_bytes_;
    const char *const shape_;
    PyOperation &op_;
    std::vector<py::object> &keys_;  // alive until submit returns: the rows point into them
    std::vector<kvblob_row_t> &out_;
    std::vector<kvblob_span_t> &spans_;  // every row's, in order; a row's count is its span_count
    size_t index_ = 0;
    py::object last_region_;
    PyRegion *region_of_last_ = nullptr;
};

}  // namespace

// The rows read into the batch (BatchReader), the host asked without the GIL.
std::shared_ptr<PyOperation> PyDriver::submit(OpKind kind, py::handle rows)
{
    auto op = std::make_shared<PyOperation>();
    op->driver_serial = serial;
    SubmitScratch::Lease scratch;
    BatchReader reader(kind, *op, scratch);
    if (PyList_CheckExact(rows.ptr()) || PyTuple_CheckExact(rows.ptr())) {
        reader.reserve(Py_SIZE(rows.ptr()));
        // Each row held while read: an __index__ of its own may change the list.
        for (Py_ssize_t i = 0; i < Py_SIZE(rows.ptr()); ++i)
            reader.add_row(py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(rows.ptr(), i)));
    } else {
        for (const auto &row : rows) reader.add_row(row);
    }
    const kvblob_batch_t batch = reader.batch();
    Driver &d = get();
    op->op = without_gil([&] { return d.submit(kind, batch); });
    operations.add(op);
    return op;
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
