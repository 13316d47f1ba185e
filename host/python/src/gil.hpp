// Host calls made without the GIL: a call that may wait on the driver (a
// poll, a wait, an access or a cancel) lets other Python threads run
// meanwhile.
#pragma once

#include <pybind11/pybind11.h>

namespace kvblob::python {

// call(), with the GIL released while it runs and held again for its result.
template <class Call>
auto without_gil(Call &&call)
{
    pybind11::gil_scoped_release nogil;
    return call();
}

}  // namespace kvblob::python
