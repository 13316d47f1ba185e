#include "kvblob/support/span_copy.hpp"

#include "kvblob/support/crc32c.hpp"
#include "kvblob/support/device_copy.hpp"

namespace kvblob::support {

bool copy_from_span(uint32_t &crc, uint8_t *dst, const SpanRef &span, std::string &error)
{
    if (!span.device) {
        crc = crc32c_copy(crc, dst, span.data, span.length);
        return true;
    }
    return device_to_host(span.data, span.length, span.device_ordinal,
                          [&](const uint8_t *chunk, size_t len) {
                              crc = crc32c_copy(crc, dst, chunk, len);
                              dst += len;
                          },
                          error);
}

bool copy_to_span(uint32_t &crc, const SpanRef &span, const uint8_t *src, std::string &error)
{
    if (!span.device) {
        crc = crc32c_copy(crc, span.data, src, span.length);
        return true;
    }
    return host_to_device(span.data, span.length, span.device_ordinal,
                          [&](uint8_t *chunk, size_t len) {
                              crc = crc32c_copy(crc, chunk, src, len);
                              src += len;
                          },
                          error);
}

}  // namespace kvblob::support
