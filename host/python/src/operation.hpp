// An admitted operation as Python holds it: the operation, the regions its
// rows name (alive until it is released), and its results as RowResults.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "conversions.hpp"
#include "gil.hpp"
#include "kvblob/host/driver.hpp"
#include "region.hpp"
#include "row_result.hpp"

namespace kvblob::python {

namespace py = pybind11;

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
    // Whether the host has answered final already (wait, poll, settled, or
    // results asked): final stays final (the host holds a driver that goes
    // back to it, R-ROW-1), so results need not ask poll again first.
    bool final_known = false;

    bool wait(std::optional<double> timeout)
    {
        Operation &o = live();
        const auto ms = to_ms(timeout);
        const bool settled = without_gil([&] { return o.wait(ms); });
        final_known = final_known || settled;
        return settled;
    }
    // Each row's result as the host answers now, into rows; whether they
    // are final (the caller keeps final ones in last_final).
    bool ask_host(std::vector<kvblob::RowStatus> &rows)
    {
        Operation &o = live();
        const bool known = final_known;
        bool final;
        {
            py::gil_scoped_release nogil;
            final = known || o.is_final();  // asked first: results read after it are final too
            rows = o.results();
        }
        final_known = final;
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
            book->rows = rows.size();
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
        bool final, settled;
        {
            py::gil_scoped_release nogil;
            final = o.is_final();
            settled = final && o.access() != KVBLOB_ACCESS_OPEN;
        }
        final_known = final_known || final;
        return settled;
    }
    // Releases the handle once settled; then the regions may go.
    kvblob_status release()
    {
        if (!op.handle()) return KVBLOB_OK;  // released already
        const kvblob_status st = without_gil([&] { return op.release(); });
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

// Operation as Python holds it: a plain CPython type, not a pybind class.
// An engine makes one per batch and calls four or five of its methods:
// through pybind each call is a dispatch (arguments into a vector, self
// looked up by C++ type name) and each object an entry in pybind's instance
// map; here a call is CPython's own (METH_NOARGS, METH_O, METH_FASTCALL) and
// an object comes from the last ones freed.
struct OperationObject {
    PyObject_HEAD
    std::shared_ptr<PyOperation> op;  // never empty while the object lives
    PyObject *weakrefs;
};

// A new Python Operation holding op (a new reference); throws when Python
// has no memory for it.
PyObject *wrap_operation(std::shared_ptr<PyOperation> op);

// Operation's type into m (after RowStatus and Access, which its methods hand out).
void bind_operation(py::module_ &m);

}  // namespace kvblob::python
