// Keys of one width, back to back in one buffer, each a std::string_view
// into it. A request's block keys come this way (packed_block_keys,
// block_sequence.hpp): thousands of keys of one width, so one allocation
// instead of a std::string, and an allocation, per key, which cost nearly
// half as much as hashing them. A key's bytes and length are what a batch
// row takes (kvblob_row_t's key and key_len), so rows can point straight
// at them (transfer_blocks and stored_prefix do).
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvblob {

// count keys of width bytes at data, not owned: valid while their buffer
// lives (a PackedKeys, or a part of one).
class KeysView {
public:
    KeysView() = default;
    KeysView(const char *data, size_t count, size_t width) : data_(data), count_(count), width_(width) {}

    size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }
    size_t width() const noexcept { return width_; }
    // Key i (i < size()).
    std::string_view operator[](size_t i) const noexcept { return {data_ + i * width_, width_}; }
    // Key i is the width() bytes at data() + i * width().
    const char *data() const noexcept { return data_; }
    // The first n keys (n <= size()).
    KeysView first(size_t n) const noexcept { return {data_, n, width_}; }
    // Each key its own string, for callers that keep them apart.
    std::vector<std::string> strings() const { return std::vector<std::string>(begin(), end()); }

    class iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = std::string_view;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = std::string_view;
        iterator() = default;
        iterator(const char *at, size_t width) : at_(at), width_(width) {}
        std::string_view operator*() const noexcept { return {at_, width_}; }
        iterator &operator++() noexcept
        {
            at_ += width_;
            return *this;
        }
        iterator operator++(int) noexcept
        {
            iterator was = *this;
            ++*this;
            return was;
        }
        bool operator==(const iterator &other) const noexcept { return at_ == other.at_; }

    private:
        const char *at_ = nullptr;
        size_t width_ = 0;
    };
    iterator begin() const noexcept { return {data_, width_}; }
    iterator end() const noexcept { return {data_ + count_ * width_, width_}; }

private:
    const char *data_ = nullptr;
    size_t count_ = 0, width_ = 0;
};

// The keys and their buffer: a KeysView that owns what it views. Moving
// one moves the buffer (views of it stay valid); it is not copied.
class PackedKeys : public KeysView {
public:
    PackedKeys() = default;
    // count keys of width bytes each, not yet written (bytes() writes them).
    PackedKeys(size_t count, size_t width)
        : PackedKeys(std::make_unique_for_overwrite<char[]>(count * width), count, width)
    {
    }
    PackedKeys(PackedKeys &&other) noexcept
        : KeysView(std::exchange<KeysView>(other, {})), bytes_(std::move(other.bytes_))
    {
    }
    PackedKeys &operator=(PackedKeys &&other) noexcept
    {
        KeysView::operator=(std::exchange<KeysView>(other, {}));
        bytes_ = std::move(other.bytes_);
        return *this;
    }

    // The buffer, to write the keys.
    char *bytes() noexcept { return bytes_.get(); }

private:
    PackedKeys(std::unique_ptr<char[]> bytes, size_t count, size_t width)
        : KeysView(bytes.get(), count, width), bytes_(std::move(bytes))
    {
    }
    std::unique_ptr<char[]> bytes_;
};

}  // namespace kvblob
