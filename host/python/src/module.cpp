// _kvblob: the host library's C++ API for Python engines (pybind11).
//
// Two promises hold here as in C++:
// - the GIL is released around every call that reaches a driver, so other
//   Python threads run while a driver works or an operation is awaited;
// - memory a driver may touch stays alive: a Region holds the exporting
//   object (and its buffer view) while registered; an Operation holds the
//   Regions its rows name until it is released; and when a registration
//   cannot end (access still open, or unprovable), the host keeps it pinned
//   and the Region gives up its references for good instead of letting the
//   memory go.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvblob/host/batch.hpp"
#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/capabilities.hpp"
#include "kvblob/host/config.hpp"
#include "kvblob/host/load_error.hpp"
#include "kvblob/host/plugin.hpp"
#include "kvblob/host/version.hpp"

// batch.hpp's helpers, in namespace kvblob like all of the public API.
using kvblob::Batch;
using kvblob::make_span;

namespace py = pybind11;
using namespace kvblob;

namespace {

std::chrono::milliseconds to_ms(std::optional<double> seconds)
{
    if (!seconds) return std::chrono::milliseconds(std::chrono::hours(24 * 365));
    if (*seconds < 0 || !std::isfinite(*seconds)) throw py::value_error("timeout must be a non-negative number of seconds");
    return std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000.0));
}

// Python's name for the type of h ("list", "NoneType", ...).
std::string type_name(const py::handle &h) { return py::str(py::type::handle_of(h).attr("__name__")); }

// A refusal of a row the host could not even build: names the row and what
// was expected there (never pybind's "Unable to cast").
[[noreturn]] void bad_row(size_t row, const std::string &rule, const std::string &what)
{
    throw CallError(KVBLOB_E_REJECTED, rule, "row " + std::to_string(row) + ": " + what);
}

std::string key_bytes(const py::handle &key, size_t row)
{
    if (py::isinstance<py::bytes>(key)) return key.cast<std::string>();
    if (py::isinstance<py::str>(key)) return key.cast<std::string>();  // UTF-8
    bad_row(row, "R-ADM-4", "the key must be bytes or str, not " + type_name(key));
}

// A tuple or a list (a str or bytes is a key, not a sequence of fields).
bool is_fields(const py::handle &h) { return py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h); }

// An offset or a length: a non-negative integer (int, or anything with
// __index__ such as numpy's integers; not bool) that fits in 64 bits.
uint64_t span_number(const py::handle &h, size_t row, const char *what)
{
    if (py::isinstance<py::bool_>(h) || !PyIndex_Check(h.ptr()))
        bad_row(row, "R-ADM-6", std::string("the span's ") + what + " must be a non-negative int, not " + type_name(h));
    py::int_ value = py::reinterpret_steal<py::int_>(PyNumber_Index(h.ptr()));
    if (!value) throw py::error_already_set();
    int overflow = 0;
    const long long as_signed = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow < 0 || (overflow == 0 && as_signed < 0))
        bad_row(row, "R-ADM-6", std::string("the span's ") + what + " " + std::string(py::str(value)) + " is negative");
    const unsigned long long v = PyLong_AsUnsignedLongLong(value.ptr());
    if (PyErr_Occurred()) {
        PyErr_Clear();
        bad_row(row, "R-ADM-6", std::string("the span's ") + what + " " + std::string(py::str(value)) +
                                    " does not fit in 64 bits");
    }
    return v;
}

// An option value as the text open receives: str as is, bool as
// "true"/"false", an integer (int, numpy's) in decimal, a float in Python's shortest form (an
// integral one as an int: 4.0 -> "4"). None means "not given" and yields
// nullopt. Anything else is refused naming the option (R-OPN-1).
std::optional<std::string> option_text(const std::string &key, const py::handle &v)
{
    if (v.is_none()) return std::nullopt;
    if (py::isinstance<py::str>(v)) return v.cast<std::string>();
    if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
    if (PyIndex_Check(v.ptr())) {  // int, and numpy's integers
        py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
        if (!i) throw py::error_already_set();
        return std::string(py::str(i));
    }
    if (py::isinstance<py::float_>(v)) {
        const double d = v.cast<double>();
        if (!std::isfinite(d))
            throw CallError(KVBLOB_E_BAD_OPTION, "R-OPN-1", "option '" + key + "': " + std::string(py::repr(v)) +
                                                                " is not a finite number");
        if (d == std::trunc(d) && std::fabs(d) < 9.007199254740992e15)
            return std::to_string(static_cast<long long>(d));
        return std::string(py::repr(v));
    }
    throw CallError(KVBLOB_E_BAD_OPTION, "R-OPN-1",
                    "option '" + key + "': a " + type_name(v) +
                        " is not an option value (give a str, int, float or bool; None leaves it unset)");
}

// ---- regions ----------------------------------------------------------------

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
        kvblob_status st;
        {
            py::gil_scoped_release nogil;
            st = region.unregister();
        }
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

// ---- operations ---------------------------------------------------------------

// The ABI's result and access codes are plain integers; Python sees enums.
enum class RowState : int32_t {
    PENDING = KVBLOB_ROW_PENDING,
    READY = KVBLOB_ROW_READY,
    MISS = KVBLOB_ROW_MISS,
    NOT_READY = KVBLOB_ROW_NOT_READY,
    DECLINED = KVBLOB_ROW_DECLINED,
    FAULT = KVBLOB_ROW_FAULT,
    CANCELLED = KVBLOB_ROW_CANCELLED,
};
enum class AccessState : uint32_t {
    OPEN = KVBLOB_ACCESS_OPEN,
    ENDED = KVBLOB_ACCESS_ENDED,
    UNPROVABLE = KVBLOB_ACCESS_UNPROVABLE,
};

struct PyOperation;

// The rows' messages of one operation, read from the driver only when a row's
// message is first asked (most engines never ask for a READY row's), and
// kept: results() costs no call per row. Shared by the operation and every
// RowResult it gave, so a message asked after the operation was released is
// the one read before, or empty when none was.
struct MessageBook {
    std::weak_ptr<PyOperation> op;
    std::vector<std::optional<std::string>> text;
    std::string read(uint64_t row);
};

struct RowResult {
    RowState status;
    int32_t code;
    std::shared_ptr<MessageBook> book;
    uint64_t row = 0;
    std::string message() const { return book ? book->read(row) : std::string(); }
};

struct PyOperation : std::enable_shared_from_this<PyOperation> {
    Operation op;
    int completion_fd = -1;  // the driver's (Driver::completion_fd), -1 when it does not notify
    std::shared_ptr<MessageBook> book;
    bool book_final = false;  // book was made once the results were final
    std::vector<std::shared_ptr<PyRegion>> regions;  // alive while the driver may touch them
    // The final results as the host last gave them, kept for results() after
    // the handle is gone (released, or its driver closed). While the handle
    // lives every call asks the host, which holds the first final answer for
    // good (R-ROW-1) and notes a driver that changes it in the row's message.
    std::vector<RowResult> last_final;

    // The operation, unless it was released or its driver closed.
    Operation &live()
    {
        if (!op.handle())
            throw CallError(KVBLOB_E_INVALID, "R-OPS-1",
                            "the operation was released, or its driver closed: its handle is dead");
        return op;
    }
    bool wait(std::optional<double> timeout)
    {
        Operation &o = live();
        py::gil_scoped_release nogil;
        return o.wait(to_ms(timeout));
    }
    std::vector<RowResult> results()
    {
        if (!op.handle() && !last_final.empty()) return last_final;
        Operation &o = live();
        std::vector<kvblob::RowStatus> rows;
        std::vector<RowResult> out;
        bool final = false;
        {
            py::gil_scoped_release nogil;
            final = o.is_final();  // asked first: results read after it are final too
            rows = o.results();
        }
        // A fresh book until final: a pending row's message is not its last.
        if (!book || !book_final) {
            book = std::make_shared<MessageBook>();
            book->op = weak_from_this();
            book->text.resize(rows.size());
            book_final = final;
        }
        out.reserve(rows.size());
        for (uint64_t i = 0; i < rows.size(); ++i)
            out.push_back({static_cast<RowState>(rows[i].result), rows[i].driver_code, book, i});
        if (final) last_final = out;
        return out;
    }
    // Results final and access no longer open; asks without waiting.
    bool settled()
    {
        Operation &o = live();
        py::gil_scoped_release nogil;
        return o.is_final() && o.access() != KVBLOB_ACCESS_OPEN;
    }
    // Releases the handle once settled; then the regions may go.
    kvblob_status release()
    {
        if (!op.handle()) return KVBLOB_OK;  // released already
        kvblob_status st;
        {
            py::gil_scoped_release nogil;
            st = op.release();
        }
        if (st == KVBLOB_OK) regions.clear();
        return st;
    }
    // The driver is closing: a settled handle is released, an unsettled one
    // is cancelled and handed to the driver object (host/driver.hpp).
    void end()
    {
        Operation gone = std::move(op);
        py::gil_scoped_release nogil;
        gone = Operation();
    }
};

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

// ---- drivers ------------------------------------------------------------------

struct PyDriver {
    std::unique_ptr<Driver> driver;
    // What this driver handed out, so that close can end it all first: a
    // with-block closes its driver even while Python still holds regions
    // and operations.
    std::vector<std::weak_ptr<PyRegion>> regions;
    std::vector<std::weak_ptr<PyOperation>> operations;

    template <class T>
    static void track(std::vector<std::weak_ptr<T>> &list, const std::shared_ptr<T> &item)
    {
        std::erase_if(list, [](const std::weak_ptr<T> &w) { return w.expired(); });
        list.push_back(item);
    }

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
        track(regions, r);
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
        track(regions, r);
        return r;
    }

    // rows: (key, [(region, offset, length), ...]) or (key, region, offset, length);
    // probe and remove take bare keys. Lists serve as well as tuples. A
    // malformed row is refused naming its index and what was expected.
    std::shared_ptr<PyOperation> submit(OpKind kind, const py::iterable &rows)
    {
        Batch batch;
        auto op = std::make_shared<PyOperation>();
        const bool moves_bytes = kind == OpKind::put || kind == OpKind::get;
        const char *shape = moves_bytes ? "(key, region, offset, length) or (key, [(region, offset, length), ...])"
                                        : "a key (bytes or str)";
        size_t index = 0;
        auto span_of = [&](const py::handle &region, const py::handle &offset, const py::handle &length) {
            if (!py::isinstance<PyRegion>(region))
                bad_row(index, "R-ADM-6", "a span's region must be a kvblob.Region (from Driver.register), not " +
                                              type_name(region));
            auto r = region.cast<std::shared_ptr<PyRegion>>();
            if (!r->region) bad_row(index, "R-ADM-6", "a span names a region that was closed");
            const uint64_t off = span_number(offset, index, "offset"), len = span_number(length, index, "length");
            if (std::find(op->regions.begin(), op->regions.end(), r) == op->regions.end()) op->regions.push_back(r);
            return make_span(r->region.handle(), off, len);
        };
        for (const auto &row : rows) {
            if (!moves_bytes || py::isinstance<py::bytes>(row) || py::isinstance<py::str>(row)) {
                if (is_fields(row) && py::len(row) == 1) batch.row(key_bytes(row.cast<py::sequence>()[0], index));
                else if (py::isinstance<py::bytes>(row) || py::isinstance<py::str>(row)) batch.row(key_bytes(row, index));
                else bad_row(index, "R-ADM-4", std::string("expected ") + shape + ", got a " + type_name(row));
                ++index;
                continue;
            }
            if (!is_fields(row)) bad_row(index, "R-ADM-6", std::string("expected ") + shape + ", got a " + type_name(row));
            const py::sequence t = row.cast<py::sequence>();
            if (t.size() == 0) bad_row(index, "R-ADM-6", std::string("expected ") + shape + ", got an empty " + type_name(row));
            std::string key = key_bytes(t[0], index);
            std::vector<kvblob_span_t> spans;
            if (t.size() == 4) {
                spans.push_back(span_of(t[1], t[2], t[3]));
            } else if (t.size() == 2) {
                const py::object list = t[1];
                if (!is_fields(list))
                    bad_row(index, "R-ADM-6", "the spans must be a list of (region, offset, length), not a " +
                                                  type_name(list));
                for (const auto &sp : list) {
                    if (!is_fields(sp) || py::len(sp) != 3)
                        bad_row(index, "R-ADM-6", "a span is (region, offset, length), not " +
                                                      std::string(py::repr(sp)));
                    const py::sequence st = py::reinterpret_borrow<py::sequence>(sp);
                    spans.push_back(span_of(st[0], st[1], st[2]));
                }
            } else if (t.size() != 1) {
                bad_row(index, "R-ADM-6", std::string("expected ") + shape + ", got " + std::to_string(t.size()) +
                                              " fields");
            }
            batch.row(std::move(key), std::move(spans));
            ++index;
        }
        Driver &d = get();
        const kvblob_batch_t &b = batch.get();
        {
            py::gil_scoped_release nogil;
            op->op = d.submit(kind, b);
        }
        op->completion_fd = d.completion_fd();
        track(operations, op);
        return op;
    }

    std::string close(std::optional<double> timeout)
    {
        if (!driver) return kvblob_status_name(KVBLOB_OK);
        // Operations first (their regions stay referenced), then regions: a
        // registration the driver still refuses is pinned, its memory kept.
        for (auto &w : operations)
            if (auto op = w.lock()) op->end();
        for (auto &w : regions)
            if (auto r = w.lock()) r->close();
        operations.clear();
        regions.clear();
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

struct PyPlugin {
    std::shared_ptr<Plugin> plugin;
    std::optional<DriverConfig> config;  // when loaded from a config file

    // The caller's options (after the config file's, if any: a later one
    // wins in the driver). Keys are str; values map as option_text says.
    Options merged(const std::optional<py::dict> &options) const
    {
        Options all;
        if (options)
            for (const auto &[k, v] : *options) {
                if (!py::isinstance<py::str>(k))
                    throw CallError(KVBLOB_E_BAD_OPTION, "R-OPN-1",
                                    "an option's name must be a str, not " + type_name(k) + " (" +
                                        std::string(py::repr(k)) + ")");
                const auto key = k.cast<std::string>();
                if (auto text = option_text(key, v)) all.emplace_back(key, std::move(*text));
            }
        return all;
    }
    std::shared_ptr<PyDriver> open(const std::optional<py::dict> &options)
    {
        const Options given = merged(options);
        auto d = std::make_shared<PyDriver>();
        py::gil_scoped_release nogil;
        // From a config file, a value of the file's the driver refuses is
        // named at its line (ConfigError).
        d->driver = std::make_unique<Driver>(config ? open_configured_driver(*plugin, *config, given)
                                                    : plugin->open(given));
        return d;
    }
};

std::shared_ptr<PyPlugin> load(const std::string &spec, bool allow_untrusted, const std::string &sha256)
{
    auto p = std::make_shared<PyPlugin>();
    const bool is_config = spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".toml") == 0;
    py::gil_scoped_release nogil;
    if (is_config) {
        p->config = read_driver_config(spec);
        p->plugin = std::make_shared<Plugin>(load_configured_plugin(*p->config));
    } else {
        LoadOptions lo;
        lo.allow_untrusted_file = allow_untrusted;
        lo.expected_sha256 = sha256;
        p->plugin = std::make_shared<Plugin>(Plugin::load(spec, lo));
    }
    return p;
}

}  // namespace

PYBIND11_MODULE(_kvblob, m)
{
    m.doc() = "kvblob: load KV-cache store drivers and move blocks through them";
    m.attr("__version__") = release_version();

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

    py::enum_<RowState>(m, "RowStatus")
        .value("PENDING", RowState::PENDING)
        .value("READY", RowState::READY)
        .value("MISS", RowState::MISS)
        .value("NOT_READY", RowState::NOT_READY)
        .value("DECLINED", RowState::DECLINED)
        .value("FAULT", RowState::FAULT)
        .value("CANCELLED", RowState::CANCELLED);
    py::enum_<AccessState>(m, "Access")
        .value("OPEN", AccessState::OPEN)
        .value("ENDED", AccessState::ENDED)
        .value("UNPROVABLE", AccessState::UNPROVABLE);

    py::class_<RowResult>(m, "RowResult")
        .def_readonly("status", &RowResult::status)
        .def_readonly("code", &RowResult::code)
        .def_property_readonly("message", &RowResult::message,
                               "The driver's message, read when first asked (empty when the operation was "
                               "released before it was)")
        .def("__repr__", [](const RowResult &r) {
            const std::string m = r.message();
            return std::string("RowResult(") + kvblob_row_result_name(static_cast<kvblob_row_result>(r.status)) + ", code=" + std::to_string(r.code) +
                   (m.empty() ? "" : ", " + m) + ")";
        });

    py::class_<PyRegion, std::shared_ptr<PyRegion>>(m, "Region")
        .def_readonly("size", &PyRegion::size)
        .def_property_readonly("is_device", [](const PyRegion &r) { return r.kind == KVBLOB_MEMORY_DEVICE; })
        .def_property_readonly("registered", [](const PyRegion &r) { return static_cast<bool>(r.region); })
        .def("close", &PyRegion::close, "Unregisters now (an operation that names it keeps it alive until released)")
        .def("__enter__", [](std::shared_ptr<PyRegion> r) { return r; })
        .def("__exit__", [](PyRegion &r, py::args) { r.close(); });

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
        .def_property_readonly("settled", &PyOperation::settled,
                               "Results final and access no longer open, asked without waiting")
        .def_property_readonly("completion_fd", [](const PyOperation &o) { return o.completion_fd; },
                               "The driver's completion descriptor (readable when it announces an operation), "
                               "or -1 when the driver does not notify")
        .def("cancel", [](PyOperation &o) {
            Operation &op = o.live();
            py::gil_scoped_release nogil;
            return std::string(kvblob_status_name(op.cancel()));
        })
        .def("release", [](PyOperation &o) { return std::string(kvblob_status_name(o.release())); })
        .def("__len__", [](const PyOperation &o) { return o.op.row_count(); });

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
        .def("close", &PyDriver::close, py::arg("timeout") = py::none())
        .def("__enter__", [](std::shared_ptr<PyDriver> d) { return d; })
        .def("__exit__", [](PyDriver &d, py::args) { d.close(std::nullopt); });

    py::class_<PyPlugin, std::shared_ptr<PyPlugin>>(m, "Plugin")
        .def_property_readonly("name", [](const PyPlugin &p) { return p.plugin->name(); })
        .def_property_readonly("version", [](const PyPlugin &p) { return p.plugin->version(); })
        .def_property_readonly("description", [](const PyPlugin &p) { return p.plugin->description(); })
        .def_property_readonly("path", [](const PyPlugin &p) { return p.plugin->path().string(); })
        .def_property_readonly("abi_version", [](const PyPlugin &p) { return abi_version_text(p.plugin->abi_version()); })
        .def_property_readonly("options", [](const PyPlugin &p) {
            py::list out;
            for (const auto &o : p.plugin->options()) {
                py::dict d;
                d["name"] = o.name ? o.name : "";
                d["default"] = o.default_value ? o.default_value : "";
                d["help"] = o.help ? o.help : "";
                out.append(d);
            }
            return out;
        })
        .def_property_readonly("capabilities", [](PyPlugin &p) {
            // Declared at open: a driver opened with the plugin's (or the
            // config's) options tells them, and is closed again.
            auto d = p.open(std::nullopt);
            py::dict caps = capabilities_of(d->get().caps());
            d->close(std::nullopt);
            return caps;
        })
        .def("open", &PyPlugin::open, py::arg("options") = py::none());

    m.def("load", &load, py::arg("spec"), py::kw_only(), py::arg("allow_untrusted") = false,
          py::arg("sha256") = "",
          "Loads a plugin: a path, a short name (memory, file, redis), or a TOML config file (*.toml)");
    m.def("block_keys",
          [](const std::string &prefix, const std::vector<int32_t> &tokens, size_t tokens_per_block,
             const std::string &salt, const std::string &hash) {
              return block_keys(prefix, tokens, tokens_per_block, salt, parse_block_hash(hash));
          },
          py::arg("prefix"), py::arg("tokens"), py::arg("tokens_per_block"), py::arg("salt") = "",
          py::kw_only(), py::arg("hash") = "sha256",
          "The store keys of every full block of tokens, by a chained hash: \"sha256\" (prefix/v1/...), or "
          "\"xxh3\" (faster, keys under prefix-xxh3/; only where every request's tokens are trusted)");
    m.def("resume_bound", [](const std::vector<RowResult> &results) {
        std::vector<kvblob::RowStatus> rows;
        for (const auto &r : results) rows.push_back({static_cast<kvblob_row_result>(r.status), r.code});
        return resume_bound(rows);
    }, "How many leading blocks were delivered: the engine recomputes from there");
}
