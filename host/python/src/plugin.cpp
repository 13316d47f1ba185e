#include "plugin.hpp"

#include "kvblob/host/version.hpp"

namespace kvblob::python {

namespace py = pybind11;

std::shared_ptr<PyPlugin> load(const std::string &spec, bool allow_untrusted, const std::string &sha256)
{
    // The loader and the system read a path up to its first NUL: "real.toml\0.toml"
    // would load real.toml, a config the caller did not name.
    if (spec.find('\0') != std::string::npos)
        throw py::value_error("kvblob.load: the spec holds a NUL character (\\0), which would cut it short: refused");
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

void bind_plugin(py::module_ &m)
{
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
            auto d = p.open(std::nullopt, std::nullopt);
            py::dict caps = capabilities_of(d->get().caps());
            d->close(std::nullopt);
            return caps;
        })
        .def("open", &PyPlugin::open, py::arg("options") = py::none(), py::kw_only(),
             py::arg("metrics_label") = py::none());

    m.def("load", &load, py::arg("spec"), py::kw_only(), py::arg("allow_untrusted") = false,
          py::arg("sha256") = "",
          "Loads a plugin: a path, a short name (memory, file, redis), or a TOML config file (*.toml)");
}

}  // namespace kvblob::python
