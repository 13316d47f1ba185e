// mooncake-segment-peer: a second Mooncake client that only lends the pool
// a segment, so that a driver which mounts none puts its objects there and
// moves them over TCP. A test kills it to make those transfers fail, as a
// node that dies does.
//
//   mooncake-segment-peer LIBRARY MASTER METADATA_URL SEGMENT_BYTES
//
// Prints "ready NAME" once its segment is mounted (NAME: the client's name
// in the pool, which names its segment for a put's preferred_segments),
// then holds it until its stdin ends. Exit 0, or 3 when the client cannot be set up.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "store_api.hpp"

int main(int argc, char **argv)
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: mooncake-segment-peer LIBRARY MASTER METADATA_URL SEGMENT_BYTES\n");
        return 2;
    }
    std::unique_ptr<kvblob::mooncake::StoreLibrary> library;
    try {
        library = std::make_unique<kvblob::mooncake::StoreLibrary>(argv[1]);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mooncake-segment-peer: %s\n", e.what());
        return 3;
    }
    const auto &api = library->api();
    void *store = api.create();
    const size_t segment = std::strtoull(argv[4], nullptr, 10);
    if (!store || api.setup(store, "127.0.0.1", argv[3], segment, 16 << 20, "tcp", "", argv[2]) != 0) {
        std::fprintf(stderr, "mooncake-segment-peer: cannot set up a client of master %s\n", argv[2]);
        return 3;
    }
    char name[256] = "";
    if (api.get_hostname) api.get_hostname(store, name, sizeof name);
    std::printf("ready %s\n", name);
    std::fflush(stdout);
    while (std::getchar() != EOF) {
    }
    api.destroy(store);
    return 0;
}
