// The C++ object behind a Python Driver or Region, read without a pybind
// cast. A cast looks the C++ type up by name in pybind's tables each time;
// submit reads its Driver and a row's Region on every call, so each type's
// entry is looked up once (after its class is bound) and kept.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <typeinfo>

namespace kvblob::python {

namespace py = pybind11;

template <class T>
class Instances {
public:
    // After T's py::class_ is made.
    void bind() { info_ = py::detail::get_type_info(typeid(T), /*throw_if_missing=*/true); }
    PyTypeObject *type() const { return info_->type; }
    // Whether obj is a T (or a Python subclass of it).
    bool holds(PyObject *obj) const { return PyObject_TypeCheck(obj, info_->type); }
    // The shared_ptr holding the T behind obj, which must be one (holds);
    // empty when obj's holder was never made.
    const std::shared_ptr<T> *holder(PyObject *obj) const
    {
        auto vh = reinterpret_cast<py::detail::instance *>(obj)->get_value_and_holder(info_, true);
        return vh.holder_constructed() ? &vh.template holder<std::shared_ptr<T>>() : nullptr;
    }

private:
    py::detail::type_info *info_ = nullptr;
};

}  // namespace kvblob::python
