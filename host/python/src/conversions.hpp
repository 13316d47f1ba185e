// What the module makes of the Python values an engine hands it: timeouts,
// rows and their keys and spans, option values. Each refusal names the row
// or the option and what was expected there. Inline: submit reads every row
// through them.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#if PY_VERSION_HEX < 0x030B0000
#include <longintrepr.h>  // PyLongObject's digits (from 3.11, Python.h has them)
#endif

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kvblob/host/types.hpp"

namespace kvblob::python {

namespace py = pybind11;

inline std::chrono::milliseconds to_ms(std::optional<double> seconds)
{
    if (!seconds) return std::chrono::milliseconds(std::chrono::hours(24 * 365));
    if (*seconds < 0 || !std::isfinite(*seconds)) throw py::value_error("timeout must be a non-negative number of seconds");
    return std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000.0));
}

// Python's name for the type of h ("list", "NoneType", ...).
inline std::string type_name(const py::handle &h) { return py::str(py::type::handle_of(h).attr("__name__")); }

// A refusal of a row the host could not even build: names the row and what
// was expected there (never pybind's "Unable to cast").
[[noreturn]] inline void bad_row(size_t row, const std::string &rule, const std::string &what)
{
    throw CallError(KVBLOB_E_REJECTED, rule, "row " + std::to_string(row) + ": " + what, true);  // before any submit
}

// A row's key as the bytes the driver gets: a bytes object's own, or a
// str's UTF-8 (which CPython keeps with the str). Valid while key lives: the
// caller holds it until the driver has the batch.
[[gnu::noinline]] inline std::string_view key_view_other(const py::handle &key, size_t row)
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
inline std::string_view key_view(const py::handle &key, size_t row)
{
    // An ASCII str (most keys): its characters are its UTF-8, read in place.
    if (PyUnicode_Check(key.ptr()) && PyUnicode_IS_COMPACT_ASCII(key.ptr()))
        return {static_cast<const char *>(PyUnicode_DATA(key.ptr())), static_cast<size_t>(PyUnicode_GET_LENGTH(key.ptr()))};
    return key_view_other(key, row);
}

// A tuple or a list (a str or bytes is a key, not a sequence of fields).
inline bool is_fields(const py::handle &h) { return py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h); }

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

// An exact int below 2^60 (2^30 from Python 3.12, whose layout is read
// through its own accessors) read from the object as CPython lays it out,
// with no call: most offsets and lengths. False for any other value.
inline bool read_small_int(PyObject *h, uint64_t &v)
{
    if (!PyLong_CheckExact(h)) return false;
#if PY_VERSION_HEX >= 0x030C0000
    auto *l = reinterpret_cast<PyLongObject *>(h);
    if (!PyUnstable_Long_IsCompact(l) || PyUnstable_Long_CompactValue(l) < 0) return false;
    v = static_cast<uint64_t>(PyUnstable_Long_CompactValue(l));
    return true;
#else
    const auto *digits = reinterpret_cast<PyLongObject *>(h)->ob_digit;
    switch (Py_SIZE(h)) {
    case 0: v = 0; return true;
    case 1: v = digits[0]; return true;
    case 2: v = digits[0] | static_cast<uint64_t>(digits[1]) << PyLong_SHIFT; return true;
    default: return false;  // negative, or large: asked of CPython
    }
#endif
}
// Any offset or length but a small int (span_number).
[[gnu::noinline]] inline uint64_t span_number_other(const py::handle &h, size_t row, const char *what)
{
    if (PyLong_CheckExact(h.ptr())) {  // an int, read at once
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

// An offset or a length: a non-negative integer (int, or anything with
// __index__ such as numpy's integers; not bool) that fits in 64 bits.
inline uint64_t span_number(const py::handle &h, size_t row, const char *what)
{
    uint64_t v;
    if (read_small_int(h.ptr(), v)) return v;
    return span_number_other(h, row, what);
}

// An option value as the text open receives: str as is, bool as
// "true"/"false", an integer (int, numpy's) in decimal, a float in Python's shortest form (an
// integral one as an int: 4.0 -> "4"). None means "not given" and yields
// nullopt. Anything else is refused naming the option (R-OPN-1).
inline std::optional<std::string> option_text(const std::string &key, const py::handle &v)
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

}  // namespace kvblob::python
