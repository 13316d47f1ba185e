// Names a driver's thread, so that an operator's top -H, ps -L, perf and
// gdb say which driver a busy or blocked thread belongs to. Named by the
// thread that started it, before anyone looks. Linux keeps at most 15
// bytes of a name: longer names are cut there. Best effort: a system that
// refuses leaves the thread as it was.
#pragma once

#include <pthread.h>

#include <string>
#include <thread>

namespace kvblob::support {

inline void name_thread(std::thread &thread, const std::string &name)
{
    (void)pthread_setname_np(thread.native_handle(), name.substr(0, 15).c_str());
}

}  // namespace kvblob::support
