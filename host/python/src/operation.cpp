#include "operation.hpp"

#include <structmember.h>

#include <array>
#include <new>
#include <string>

#include "errors.hpp"

namespace kvblob::python {

namespace py = pybind11;

std::string MessageBook::read(uint64_t row)
{
    if (row >= rows) return {};
    if (text.empty()) text.resize(rows);
    if (text[row]) return *text[row];
    auto owner = op.lock();
    if (!owner || !owner->op.handle()) return {};  // released before anyone asked
    Operation &o = owner->op;
    std::string m = without_gil([&] { return o.message(row); });
    text[row] = m;
    return m;
}

namespace {

PyTypeObject *operation_type = nullptr;  // made at import, never freed

PyOperation &operation_of(PyObject *self) { return *reinterpret_cast<OperationObject *>(self)->op; }

// Operations freed, kept for the next ones: an engine drops an operation
// before (or soon after) it submits the next.
constexpr size_t spare_operations_max = 64;
std::array<PyObject *, spare_operations_max> spare_operations;
size_t spare_operation_count = 0;

void operation_dealloc(PyObject *self)
{
    auto *o = reinterpret_cast<OperationObject *>(self);
    if (o->weakrefs) PyObject_ClearWeakRefs(self);
    o->weakrefs = nullptr;
    // May end the operation (a handle never released is cancelled and
    // handed to the driver object), and lets go of its regions.
    o->op.~shared_ptr<PyOperation>();
    PyTypeObject *type = Py_TYPE(self);
    if (spare_operation_count < spare_operations_max) spare_operations[spare_operation_count++] = self;
    else type->tp_free(self);
    Py_DECREF(type);  // a heap type: each instance holds it
}

// A status as release and cancel answer it ("KVBLOB_OK"): the ABI's own
// made once, any other (a driver's vendor code) when it comes.
PyObject *status_text(kvblob_status st)
{
    static std::array<PyObject *, KVBLOB_E_INTERNAL + 1> made{};
    if (st < 0 || st > KVBLOB_E_INTERNAL) return PyUnicode_FromString(kvblob_status_name(st));
    if (!made[st]) made[st] = PyUnicode_InternFromString(kvblob_status_name(st));  // held for good
    Py_XINCREF(made[st]);
    return made[st];
}

// The one optional argument (named name) of a METH_FASTCALL|METH_KEYWORDS
// method, borrowed; nullptr when not given. Refused as CPython refuses.
PyObject *optional_argument(const char *method, const char *name, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1)
        throw py::type_error(std::string(method) + "() takes at most 1 argument (" + std::to_string(nargs + nkw) +
                             " given)");
    if (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), name) != 0)
        throw py::type_error(std::string(method) + "() got an unexpected keyword argument '" +
                             std::string(py::str(PyTuple_GET_ITEM(kwnames, 0))) + "'");
    return nargs + nkw == 1 ? args[0] : nullptr;
}

PyObject *op_poll(PyObject *self, PyObject *)
{
    return guarded([&] {
        PyOperation &o = operation_of(self);
        Operation &op = o.live();
        const bool final = without_gil([&] { return op.is_final(); });
        o.final_known = o.final_known || final;
        return PyBool_FromLong(final);
    });
}

PyObject *op_wait(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return guarded([&] {
        PyObject *timeout = optional_argument("wait", "timeout", args, nargs, kwnames);
        std::optional<double> seconds;
        if (timeout && timeout != Py_None) {
            const double s = PyFloat_AsDouble(timeout);
            if (s == -1.0 && PyErr_Occurred()) throw py::error_already_set();
            seconds = s;
        }
        return PyBool_FromLong(operation_of(self).wait(seconds));
    });
}

PyObject *op_results(PyObject *self, PyObject *)
{
    return guarded([&] { return operation_of(self).results().release().ptr(); });
}

PyObject *op_count(PyObject *self, PyObject *status)
{
    return guarded([&] {
        // RowStatus's members are the ones row_statuses holds: found by identity.
        for (size_t v = 0; v < row_statuses.size(); ++v)
            if (status == row_statuses[v]) return PyLong_FromUnsignedLongLong(operation_of(self).count(static_cast<RowState>(v)));
        if (!PyObject_TypeCheck(status, Py_TYPE(row_statuses[0])))
            throw py::type_error("count takes a RowStatus, not " + type_name(status));
        return PyLong_FromUnsignedLongLong(operation_of(self).count(py::cast<RowState>(py::handle(status))));
    });
}

PyObject *op_cancel(PyObject *self, PyObject *)
{
    return guarded([&] {
        Operation &op = operation_of(self).live();
        return status_text(without_gil([&] { return op.cancel(); }));
    });
}

PyObject *op_release(PyObject *self, PyObject *)
{
    return guarded([&] { return status_text(operation_of(self).release()); });
}

PyObject *op_settled(PyObject *self, void *)
{
    return guarded([&] { return PyBool_FromLong(operation_of(self).settled()); });
}

PyObject *op_access(PyObject *self, void *)
{
    return guarded([&] {
        Operation &op = operation_of(self).live();
        const kvblob_access a = without_gil([&] { return op.access(); });
        return py::cast(static_cast<AccessState>(a)).release().ptr();
    });
}

PyObject *op_completion_fd(PyObject *self, void *)
{
    return PyLong_FromLong(operation_of(self).op.completion_fd());
}

PyObject *op_driver_serial(PyObject *self, void *)
{
    return PyLong_FromUnsignedLongLong(operation_of(self).driver_serial);
}

Py_ssize_t op_len(PyObject *self) { return static_cast<Py_ssize_t>(operation_of(self).op.row_count()); }

PyMethodDef operation_methods[] = {
    {"poll", op_poll, METH_NOARGS, "poll($self, /)\n--\n\nWhether every row has its final result"},
    {"wait", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(op_wait)), METH_FASTCALL | METH_KEYWORDS,
     "wait($self, /, timeout=None)\n--\n\n"
     "Waits until results are final and access is no longer open; False on timeout (seconds; None: no limit)"},
    {"results", op_results, METH_NOARGS,
     "results($self, /)\n--\n\n"
     "Each row's RowResult, as the host answers now (PENDING rows while not final); after release, the last "
     "final results"},
    {"count", op_count, METH_O,
     "count($self, status, /)\n--\n\n"
     "How many rows have this status, asked like results() but without an object per row"},
    {"cancel", op_cancel, METH_NOARGS, "cancel($self, /)\n--\n\nAsks the driver to stop what has not started"},
    {"release", op_release, METH_NOARGS,
     "release($self, /)\n--\n\n"
     "Releases the handle once settled (\"KVBLOB_OK\"), then the regions its rows name may go; the driver's "
     "refusal otherwise (KVBLOB_E_BUSY while not settled, or while another thread's poll, cancel or message on "
     "it is still in the driver)"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef operation_getset[] = {
    {"settled", op_settled, nullptr, "Results final and access no longer open, asked without waiting", nullptr},
    {"access", op_access, nullptr, "Whether the driver may still touch the rows' memory (Access)", nullptr},
    {"completion_fd", op_completion_fd, nullptr,
     "The driver's completion descriptor (readable when it announces an operation), or -1 when the driver does "
     "not notify",
     nullptr},
    {"_driver_serial", op_driver_serial, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef operation_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(OperationObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

PyObject *wrap_operation(std::shared_ptr<PyOperation> op)
{
    PyObject *self = spare_operation_count > 0
                         ? PyObject_Init(spare_operations[--spare_operation_count], operation_type)
                         : operation_type->tp_alloc(operation_type, 0);
    if (!self) throw py::error_already_set();
    auto *o = reinterpret_cast<OperationObject *>(self);
    new (&o->op) std::shared_ptr<PyOperation>(std::move(op));
    o->weakrefs = nullptr;
    return self;
}

void bind_operation(py::module_ &m)
{
    static const std::string name = std::string(py::str(m.attr("__name__"))) + ".Operation";
    static PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void *>(operation_dealloc)},
        {Py_tp_methods, operation_methods},
        {Py_tp_getset, operation_getset},
        {Py_tp_members, operation_members},
        {Py_sq_length, reinterpret_cast<void *>(op_len)},
        {Py_tp_doc, const_cast<char *>("An admitted operation (Driver.put, get, probe, remove): wait, read its "
                                       "results, release")},
        {0, nullptr},
    };
    static PyType_Spec spec{name.c_str(), static_cast<int>(sizeof(OperationObject)), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, slots};
    operation_type = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&spec));
    if (!operation_type) throw py::error_already_set();
    m.add_object("Operation", py::handle(reinterpret_cast<PyObject *>(operation_type)));
}

}  // namespace kvblob::python
