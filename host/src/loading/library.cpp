#include "library.hpp"

#include <link.h>
#include <unistd.h>

#include <cstdint>

#include "plugin_file.hpp"
#include "plugin_pointers.hpp"

namespace kvblob {

Library::~Library()
{
    if (!handle_ || pinned()) return;  // a pinned object keeps its descriptor name too
    dlclose(handle_);
    if (fd_ < 0) return;
    // dlclose may leave the object loaded (a C++ object with unique symbols
    // cannot be unloaded): then its name, /proc/self/fd/<fd_>, stays taken,
    // and the descriptor stays open so no later plugin is given that number.
    if (!loaded_under(descriptor_path(fd_))) ::close(fd_);
}

std::string Library::outside_image(const void *p, size_t bytes) const
{
    link_map *map = nullptr;
    if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || !map) return "the plugin's own image cannot be found";
    struct Search {
        const link_map *map;
        uintptr_t begin, end;
        bool found_object, inside;
    } s{map, reinterpret_cast<uintptr_t>(p), 0, false, false};
    s.end = s.begin + bytes;
    if (s.end < s.begin) return "it wraps around the address space";
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *s = static_cast<Search *>(data);
            // The object whose link map dlopen returned: same base, same name.
            if (info->dlpi_addr != s->map->l_addr || info->dlpi_name != s->map->l_name) return 0;
            s->found_object = true;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const auto &ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_R)) continue;
                const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
                if (s->begin >= lo && s->end <= hi) s->inside = true;
            }
            return 1;
        },
        &s);
    if (!s.found_object) return "the plugin's own image cannot be found";
    if (s.inside) return {};
    Dl_info where{};
    std::string owner = "no loaded object";
    if (dladdr(p, &where) && where.dli_fname) owner = where.dli_fname;
    return address_text(s.begin) + " (" + std::to_string(bytes) +
           " bytes) does not lie inside one loaded segment of the plugin's own image (the address belongs to " + owner +
           ")";
}

}  // namespace kvblob
