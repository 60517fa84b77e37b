// What the link server's files share about messages (docs/link.md "Messages"): a kind's name,
// the size check of a fixed payload, and the writer of a payload's variable tail.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "frame.h"
#include "rt/error.h"

namespace hostlink {

constexpr size_t kMaxTextLength = 255;  // u8-length strings

// The message table's name of `kind` ("LOAD_BEGIN"), "unknown" for any other byte.
const char* kind_name(uint8_t kind);

// Printable ASCII only, as the host shows reasons.
inline uint8_t printable(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return u < 0x20 || u > 0x7e ? '?' : (c == '"' ? '\'' : u);
}

// BadMessage naming the request's kind unless its payload is exactly `size` bytes.
rt::Error expect_size(const Frame& request, size_t size);

// A host file's name (GET_OUTPUT_FILE, NPU_WRITE_FILE): the payload's `length` bytes from
// `at` must be all of its rest, 1..kMaxFileName of [A-Za-z0-9._-], not starting with '.' (a
// name in the emulator's folder, never a path); copied NUL-terminated into `name`.
rt::Error take_file_name(const Frame& request, size_t at, size_t length,
                         char (&name)[kMaxFileName + 1]);

// The variable tail of a payload (after its contract layout) over a fixed buffer: bytes and
// strings appended; `full` once anything did not fit.
class Writer {
 public:
  Writer(uint8_t* data, size_t capacity) : data_(data), capacity_(capacity) {}
  Writer& u8(uint8_t v) { return put(&v, 1); }
  Writer& put(const void* p, size_t n) {
    if (n > capacity_ - size_) {
      full_ = true;
      return *this;
    }
    memcpy(data_ + size_, p, n);
    size_ += n;
    return *this;
  }
  // u8 length + bytes, cut to 255 and to printable ASCII.
  Writer& text(const char* s) {
    size_t n = strlen(s);
    n = n > kMaxTextLength ? kMaxTextLength : n;
    if (n + 1 > capacity_ - size_) {
      full_ = true;
      return *this;
    }
    data_[size_++] = static_cast<uint8_t>(n);
    for (size_t i = 0; i < n; ++i) data_[size_++] = printable(s[i]);
    return *this;
  }
  size_t size() const { return size_; }
  size_t room() const { return capacity_ - size_; }
  bool full() const { return full_; }

 private:
  uint8_t* data_;
  size_t capacity_;
  size_t size_ = 0;
  bool full_ = false;
};

}  // namespace hostlink
