// A loaded plugin as Python holds it, from a path, a short name or a TOML
// configuration file.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "driver.hpp"
#include "kvblob/host/config.hpp"
#include "kvblob/host/plugin.hpp"

namespace kvblob::python {

namespace py = pybind11;

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
    // metrics_label, when given, is the instance label of the driver's
    // metrics (over a config file's [metrics] label).
    std::shared_ptr<PyDriver> open(const std::optional<py::dict> &options, const std::optional<std::string> &metrics_label)
    {
        const Options given = merged(options);
        auto d = std::make_shared<PyDriver>();
        py::gil_scoped_release nogil;
        // From a config file, a value of the file's the driver refuses, or
        // a tier of the file's that cannot be loaded or opened, is named at
        // its line (ConfigError).
        if (config) {
            DriverConfig labelled = *config;
            if (metrics_label) labelled.metrics_label = *metrics_label;
            d->driver = std::make_unique<Driver>(open_configured_driver(*plugin, labelled, given));
        } else {
            d->driver = std::make_unique<Driver>(plugin->open(given, {}, {}, metrics_label.value_or("")));
        }
        return d;
    }
};

// Loads spec: a path, a short name, or a TOML configuration file (*.toml).
std::shared_ptr<PyPlugin> load(const std::string &spec, bool allow_untrusted, const std::string &sha256);

// Plugin, and load.
void bind_plugin(py::module_ &m);

}  // namespace kvblob::python
