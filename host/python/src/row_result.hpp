// What an operation's results are in Python: RowStatus and Access (the
// ABI's codes as enums), and RowResult, one row's answer, a plain CPython
// type made cheap to create and read (results() makes one per row).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <structmember.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvblob/host/types.hpp"

namespace kvblob::python {

namespace py = pybind11;

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
    uint64_t rows = 0;
    std::vector<std::optional<std::string>> text;  // sized to rows at the first message asked
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

inline PyTypeObject *row_result_type = nullptr;      // made at import, never freed
inline std::array<PyObject *, 7> row_statuses{};      // RowStatus.PENDING..CANCELLED by value, held for good

inline PyObject *status_object(kvblob_row_result result)
{
    if (result >= 0 && static_cast<size_t>(result) < row_statuses.size()) {
        Py_INCREF(row_statuses[result]);
        return row_statuses[result];
    }
    return py::cast(static_cast<RowState>(result)).release().ptr();  // not one the ABI names
}

// The book as RowResults hold it: a reference to a Python object costs no
// atomic operation, where a shared_ptr per row would.
inline py::capsule book_capsule(const std::shared_ptr<MessageBook> &book)
{
    return py::capsule(new std::shared_ptr<MessageBook>(book),
                       [](void *p) { delete static_cast<std::shared_ptr<MessageBook> *>(p); });
}

// RowResults freed, kept for the next ones: an engine reads an operation's
// results and drops them before it asks the next operation's, so results()
// mostly reuses the last one's instead of allocating one per row.
constexpr size_t spare_rows_max = 1024;
inline std::array<PyObject *, spare_rows_max> spare_rows;
inline size_t spare_row_count = 0;

inline py::object make_row_result(const kvblob::RowStatus &status, const py::capsule &book, uint64_t row)
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

// The RowResult behind h, or nullptr when h is not one.
inline const RowResultObject *as_row_result(const py::handle &h)
{
    return Py_TYPE(h.ptr()) == row_result_type ? reinterpret_cast<const RowResultObject *>(h.ptr()) : nullptr;
}

inline std::string row_message(const RowResultObject &r)
{
    auto *book = static_cast<std::shared_ptr<MessageBook> *>(PyCapsule_GetPointer(r.book, nullptr));
    if (!book) throw py::error_already_set();
    return (*book)->read(r.row);
}

// RowStatus and Access into m, RowStatus's members made the ones results
// hand out (status_object), and RowResult's type made and added.
void bind_row_results(py::module_ &m);

}  // namespace kvblob::python
