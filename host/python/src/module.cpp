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
#include <structmember.h>

#include <algorithm>
#include <array>
#include <atomic>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvblob/host/batch.hpp"
#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/capabilities.hpp"
#include "kvblob/host/config.hpp"
#include "kvblob/host/load_error.hpp"
#include "kvblob/host/plugin.hpp"
#include "kvblob/host/version.hpp"

// batch.hpp's helper, in namespace kvblob like all of the public API.
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

// A row's key as the bytes the driver gets: a bytes object's own, or a
// str's UTF-8 (which CPython keeps with the str). Valid while key lives: the
// caller holds it until the driver has the batch.
std::string_view key_view(const py::handle &key, size_t row)
{
    if (PyBytes_Check(key.ptr())) return {PyBytes_AS_STRING(key.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(key.ptr()))};
    if (PyUnicode_Check(key.ptr())) {
        Py_ssize_t n = 0;
        if (const char *text = PyUnicode_AsUTF8AndSize(key.ptr(), &n)) return {text, static_cast<size_t>(n)};
        PyErr_Clear();
        key.cast<std::string>();  // no UTF-8 (a lone surrogate): pybind's refusal, as always
        throw py::cast_error("the key is not valid UTF-8");
    }
    bad_row(row, "R-ADM-4", "the key must be bytes or str, not " + type_name(key));
}

// A tuple or a list (a str or bytes is a key, not a sequence of fields).
bool is_fields(const py::handle &h) { return py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h); }

// The fields of a row or a span (a tuple or a list): read in place when it
// is exactly a tuple or a list, with no call per field; a subclass answers
// through its own __len__ and __getitem__, as it always did.
class Fields {
public:
    explicit Fields(const py::handle &seq)
        : seq_(seq), exact_(PyTuple_CheckExact(seq.ptr()) || PyList_CheckExact(seq.ptr()))
    {
    }
    size_t size() const { return exact_ ? static_cast<size_t>(Py_SIZE(seq_.ptr())) : py::len(seq_); }
    py::object operator[](size_t i) const
    {
        if (exact_ && i < size())
            return py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(seq_.ptr(), static_cast<Py_ssize_t>(i)));
        return other(i);
    }

private:
    [[gnu::noinline]] py::object other(size_t i) const
    {
        if (!exact_) return py::reinterpret_borrow<py::sequence>(seq_)[i];
        // A list emptied meanwhile (by an __index__ of the row's own).
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        throw py::error_already_set();
    }

    py::handle seq_;
    bool exact_;
};

// An offset or a length: a non-negative integer (int, or anything with
// __index__ such as numpy's integers; not bool) that fits in 64 bits.
uint64_t span_number(const py::handle &h, size_t row, const char *what)
{
    if (PyLong_CheckExact(h.ptr())) {  // the usual case, read at once
        const unsigned long long v = PyLong_AsUnsignedLongLong(h.ptr());
        if (v != static_cast<unsigned long long>(-1) || !PyErr_Occurred()) return v;
        PyErr_Clear();  // negative, or too large: said below
    }
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

// RowResult: a plain CPython type, not a pybind class. results() makes one
// per row each time it is asked, and an engine reads every row's status: a
// pybind instance costs a holder, an entry in pybind's instance map and a
// dispatch per attribute read; this one is an allocation, and its status
// and code are read as plain members. status is one of RowStatus's own
// members (row_statuses), so that no conversion is made per read and
// `r.status == RowStatus.READY` is settled by identity (status_eq).
struct RowResultObject {
    PyObject_HEAD
    PyObject *status;  // a RowStatus member, held
    int32_t code;
    int32_t result;  // the kvblob_row_result status stands for
    uint64_t row;
    PyObject *book;  // a capsule of the operation's shared_ptr<MessageBook> (book_capsule), held
};

PyTypeObject *row_result_type = nullptr;      // made at import, never freed
std::array<PyObject *, 7> row_statuses{};      // RowStatus.PENDING..CANCELLED by value, held for good

PyObject *status_object(kvblob_row_result result)
{
    if (result >= 0 && static_cast<size_t>(result) < row_statuses.size()) {
        Py_INCREF(row_statuses[result]);
        return row_statuses[result];
    }
    return py::cast(static_cast<RowState>(result)).release().ptr();  // not one the ABI names
}

// The book as RowResults hold it: a reference to a Python object costs no
// atomic operation, where a shared_ptr per row would.
py::capsule book_capsule(const std::shared_ptr<MessageBook> &book)
{
    return py::capsule(new std::shared_ptr<MessageBook>(book),
                       [](void *p) { delete static_cast<std::shared_ptr<MessageBook> *>(p); });
}

// RowResults freed, kept for the next ones: an engine reads an operation's
// results and drops them before it asks the next operation's, so results()
// mostly reuses the last one's instead of allocating one per row.
constexpr size_t spare_rows_max = 1024;
std::array<PyObject *, spare_rows_max> spare_rows;
size_t spare_row_count = 0;

py::object make_row_result(const kvblob::RowStatus &status, const py::capsule &book, uint64_t row)
{
    py::object r;
    if (spare_row_count > 0)
        r = py::reinterpret_steal<py::object>(PyObject_Init(spare_rows[--spare_row_count], row_result_type));
    else
        r = py::reinterpret_steal<py::object>(row_result_type->tp_alloc(row_result_type, 0));
    if (!r) throw py::error_already_set();
    auto *f = reinterpret_cast<RowResultObject *>(r.ptr());
    f->status = status_object(status.result);
    f->code = status.driver_code;
    f->result = status.result;
    f->row = row;
    f->book = book.inc_ref().ptr();
    return r;
}

void row_result_dealloc(PyObject *self)
{
    auto *f = reinterpret_cast<RowResultObject *>(self);
    Py_CLEAR(f->book);
    Py_CLEAR(f->status);
    PyTypeObject *type = Py_TYPE(self);
    if (spare_row_count < spare_rows_max) spare_rows[spare_row_count++] = self;
    else type->tp_free(self);
    Py_DECREF(type);  // a heap type: each instance holds it
}

// The RowResult behind h, or nullptr when h is not one.
const RowResultObject *as_row_result(const py::handle &h)
{
    return Py_TYPE(h.ptr()) == row_result_type ? reinterpret_cast<const RowResultObject *>(h.ptr()) : nullptr;
}

std::string row_message(const RowResultObject &r)
{
    auto *book = static_cast<std::shared_ptr<MessageBook> *>(PyCapsule_GetPointer(r.book, nullptr));
    if (!book) throw py::error_already_set();
    return (*book)->read(r.row);
}

PyMemberDef row_result_members[] = {
    {"status", T_OBJECT_EX, offsetof(RowResultObject, status), READONLY, "The row's RowStatus"},
    {"code", T_INT, offsetof(RowResultObject, code), READONLY, "The driver's code for the row"},
    {nullptr, 0, 0, 0, nullptr},
};

// RowResult's type, named name (the module's, then ".RowResult").
PyTypeObject *make_row_result_type(const char *name)
{
    static PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void *>(row_result_dealloc)},
        {Py_tp_members, row_result_members},
        {Py_tp_doc, const_cast<char *>("One row's result: status, code, and the driver's message (read when asked)")},
        {0, nullptr},
    };
    PyType_Spec spec{name, static_cast<int>(sizeof(RowResultObject)), 0,
                     Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, slots};
    auto *type = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&spec));
    if (!type) throw py::error_already_set();
    return type;
}

// RowStatus's == and != as pybind made them (the same type and the same
// value), with identity asked first: results hand out RowStatus's own
// members, so comparing a row's status with one costs no conversion.
PyObject *status_eq_pybind = nullptr, *status_ne_pybind = nullptr;  // pybind's, held for good

PyObject *status_compare(PyObject *self, PyObject *other, bool equal, PyObject *pybind_way)
{
    if (self == other) return Py_NewRef(equal ? Py_True : Py_False);
    if (Py_TYPE(self) != Py_TYPE(other)) return Py_NewRef(equal ? Py_False : Py_True);
    return PyObject_CallFunctionObjArgs(pybind_way, self, other, nullptr);
}
PyObject *status_eq(PyObject *self, PyObject *other) { return status_compare(self, other, true, status_eq_pybind); }
PyObject *status_ne(PyObject *self, PyObject *other) { return status_compare(self, other, false, status_ne_pybind); }
// RowStatus's comparison slot: the two above called straight, not looked up
// by name as the slot pybind's __eq__ and __ne__ leave would (no other
// comparison is defined for RowStatus).
PyObject *status_richcompare(PyObject *self, PyObject *other, int op)
{
    if (op == Py_EQ) return status_eq(self, other);
    if (op == Py_NE) return status_ne(self, other);
    Py_RETURN_NOTIMPLEMENTED;
}

struct PyOperation : std::enable_shared_from_this<PyOperation> {
    Operation op;
    std::shared_ptr<MessageBook> book;
    py::capsule book_held;    // book, as RowResults hold it
    bool book_final = false;  // book was made once the results were final
    std::vector<std::shared_ptr<PyRegion>> regions;  // alive while the driver may touch them
    // The final results as the host last gave them, kept for results() after
    // the handle is gone (released, or its driver closed). While the handle
    // lives every call asks the host, which holds the first final answer for
    // good (R-ROW-1) and notes a driver that changes it in the row's message.
    std::vector<kvblob::RowStatus> last_final;
    // Which driver admitted it (PyDriver::serial): asyncio's waker is the
    // driver's, not its descriptor number's, which a later driver may reuse.
    uint64_t driver_serial = 0;

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
    // Each row's result as the host answers now, into rows; whether they
    // are final (the caller keeps final ones in last_final).
    bool ask_host(std::vector<kvblob::RowStatus> &rows)
    {
        Operation &o = live();
        py::gil_scoped_release nogil;
        const bool final = o.is_final();  // asked first: results read after it are final too
        rows = o.results();
        return final;
    }
    py::list results()
    {
        if (!op.handle() && !last_final.empty()) return rows_list(last_final);
        std::vector<kvblob::RowStatus> rows;
        const bool final = ask_host(rows);
        // A fresh book until final: a pending row's message is not its last.
        if (!book || !book_final) {
            book = std::make_shared<MessageBook>();
            book->op = weak_from_this();
            book->text.resize(rows.size());
            book_held = book_capsule(book);
            book_final = final;
        }
        py::list out = rows_list(rows);
        if (final) last_final = std::move(rows);
        return out;
    }
    // How many rows have this status: results() without an object per row,
    // for an engine that asks "all READY?" or "how many hits?" in one call.
    uint64_t count(RowState status)
    {
        const auto wanted = static_cast<kvblob_row_result>(status);
        const auto counted = [&](const std::vector<kvblob::RowStatus> &rows) {
            return static_cast<uint64_t>(
                std::count_if(rows.begin(), rows.end(), [&](const auto &r) { return r.result == wanted; }));
        };
        if (!op.handle() && !last_final.empty()) return counted(last_final);
        std::vector<kvblob::RowStatus> rows;
        const bool final = ask_host(rows);
        const uint64_t n = counted(rows);
        if (final) last_final = std::move(rows);
        return n;
    }
    // A RowResult for each row, sharing book.
    py::list rows_list(const std::vector<kvblob::RowStatus> &rows) const
    {
        py::list out(rows.size());
        for (uint64_t i = 0; i < rows.size(); ++i)
            PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), make_row_result(rows[i], book_held, i).release().ptr());
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
    //
    // The batch points into the Python objects themselves (a key's bytes, a
    // str's UTF-8), held here until the driver has it: no copy per row.
    std::shared_ptr<PyOperation> submit(OpKind kind, const py::iterable &rows)
    {
        auto op = std::make_shared<PyOperation>();
        op->driver_serial = serial;
        const bool moves_bytes = kind == OpKind::put || kind == OpKind::get;
        const char *shape = moves_bytes ? "(key, region, offset, length) or (key, [(region, offset, length), ...])"
                                        : "a key (bytes or str)";
        std::vector<py::object> keys;  // alive until submit returns: the rows point into them
        std::vector<kvblob_row_t> out;
        std::vector<kvblob_span_t> spans;  // every row's, in order; a row's count is its span_count
        const bool exact = PyList_CheckExact(rows.ptr()) || PyTuple_CheckExact(rows.ptr());
        if (exact) {
            keys.reserve(Py_SIZE(rows.ptr()));
            out.reserve(Py_SIZE(rows.ptr()));
            if (moves_bytes) spans.reserve(Py_SIZE(rows.ptr()));
        }
        size_t index = 0;
        auto add_key = [&](py::object key) {
            const std::string_view bytes = key_view(key, index);
            keys.push_back(std::move(key));
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
                if (!py::isinstance<PyRegion>(region))
                    bad_row(index, "R-ADM-6", "a span's region must be a kvblob.Region (from Driver.register), not " +
                                                  type_name(region));
                auto r = region.cast<std::shared_ptr<PyRegion>>();
                if (std::find(op->regions.begin(), op->regions.end(), r) == op->regions.end())
                    op->regions.push_back(r);
                last_region = py::reinterpret_borrow<py::object>(region);
                region_of_last = r.get();
            }
            if (!region_of_last->region) bad_row(index, "R-ADM-6", "a span names a region that was closed");
            const uint64_t off = span_number(offset, index, "offset"), len = span_number(length, index, "length");
            spans.push_back(make_span(region_of_last->region.handle(), off, len));
            ++out.back().span_count;
        };
        auto add_row = [&](const py::handle &row) {
            if (!moves_bytes || PyBytes_Check(row.ptr()) || PyUnicode_Check(row.ptr())) {
                if (is_fields(row) && Fields(row).size() == 1) add_key(Fields(row)[0]);
                else if (PyBytes_Check(row.ptr()) || PyUnicode_Check(row.ptr())) add_key(py::reinterpret_borrow<py::object>(row));
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

    {
        // Results hand out these very members (status_object); == and !=
        // ask identity first (status_compare).
        const py::object statuses = m.attr("RowStatus");
        const char *names[] = {"PENDING", "READY", "MISS", "NOT_READY", "DECLINED", "FAULT", "CANCELLED"};
        for (size_t v = 0; v < row_statuses.size(); ++v) {
            row_statuses[v] = py::object(statuses.attr(names[v])).release().ptr();
            if (py::cast<RowState>(py::handle(row_statuses[v])) != static_cast<RowState>(v))
                throw std::logic_error("RowStatus members out of order");
        }
        status_eq_pybind = py::object(statuses.attr("__eq__")).release().ptr();
        status_ne_pybind = py::object(statuses.attr("__ne__")).release().ptr();
        static PyMethodDef eq{"__eq__", reinterpret_cast<PyCFunction>(status_eq), METH_O, nullptr};
        static PyMethodDef ne{"__ne__", reinterpret_cast<PyCFunction>(status_ne), METH_O, nullptr};
        auto *type = reinterpret_cast<PyTypeObject *>(statuses.ptr());
        statuses.attr("__eq__") = py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, &eq));
        statuses.attr("__ne__") = py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, &ne));
        // Set after the attributes: setting them made the slot look them up by name.
        type->tp_richcompare = status_richcompare;
        PyType_Modified(type);
    }

    static const std::string row_result_name = std::string(py::str(m.attr("__name__"))) + ".RowResult";
    row_result_type = make_row_result_type(row_result_name.c_str());
    {
        const py::handle type(reinterpret_cast<PyObject *>(row_result_type));
        const py::object property = py::module_::import("builtins").attr("property");
        type.attr("message") = property(
            py::cpp_function([](const py::handle &self) { return row_message(*as_row_result(self)); }),
            py::none(), py::none(),
            "The driver's message, read when first asked (empty when the operation was released before it was)");
        type.attr("__repr__") = py::cpp_function(
            [](const py::handle &self) {
                const RowResultObject &r = *as_row_result(self);
                const std::string message = row_message(r);
                return std::string("RowResult(") + kvblob_row_result_name(static_cast<kvblob_row_result>(r.result)) +
                       ", code=" + std::to_string(r.code) + (message.empty() ? "" : ", " + message) + ")";
            },
            py::name("__repr__"), py::is_method(type));
        m.add_object("RowResult", type);
    }

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
    m.def("resume_bound", [](const py::sequence &results) {
        std::vector<kvblob::RowStatus> rows;
        for (const auto &item : results) {
            const RowResultObject *r = as_row_result(item);
            if (!r) throw py::type_error("resume_bound takes RowResults (from Operation.results()), not " + type_name(item));
            rows.push_back({static_cast<kvblob_row_result>(r->result), r->code});
        }
        return resume_bound(rows);
    }, "How many leading blocks were delivered: the engine recomputes from there");
}
