// Loads the vendor driver through the installed host library.
#include <kvblob/host/plugin.hpp>

#include <iostream>

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    try {
        auto plugin = kvblob::Plugin::load(argv[1]);
        auto driver = plugin.open();
        std::cout << "loaded " << plugin.name() << " " << plugin.version() << "\n";
        return 0;
    } catch (const std::exception &e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
