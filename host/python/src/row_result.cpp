#include "row_result.hpp"

#include <stdexcept>

#include "conversions.hpp"

namespace kvblob::python {

namespace py = pybind11;

namespace {

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

// RowStatus's members are the ones results hand out (status_object); == and
// != ask identity first (status_compare).
void make_statuses_shared(py::module_ &m)
{
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

// RowResult's type, its message property and repr, added to m.
void add_row_result_type(py::module_ &m)
{
    static const std::string row_result_name = std::string(py::str(m.attr("__name__"))) + ".RowResult";
    row_result_type = make_row_result_type(row_result_name.c_str());
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

}  // namespace

void bind_row_results(py::module_ &m)
{
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

    make_statuses_shared(m);
    add_row_result_type(m);
}

}  // namespace kvblob::python
