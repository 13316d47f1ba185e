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
//
// One file per thing Python holds (conversions, row_result, region,
// operation, driver, plugin, errors, metrics); this one puts the module together, in
// the order its types must be known.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "driver.hpp"
#include "errors.hpp"
#include "metrics.hpp"
#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/version.hpp"
#include "operation.hpp"
#include "plugin.hpp"
#include "region.hpp"
#include "row_result.hpp"

namespace py = pybind11;
using namespace kvblob;
using namespace kvblob::python;

PYBIND11_MODULE(_kvblob, m)
{
    m.doc() = "kvblob: load KV-cache store drivers and move blocks through them";
    m.attr("__version__") = release_version();
    bind_errors(m);
    bind_row_results(m);
    bind_region(m);
    bind_operation(m);
    bind_driver(m);
    bind_plugin(m);
    bind_metrics(m);
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
