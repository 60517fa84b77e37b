// Caller-owned memory, handed out front to back. No heap anywhere in the runtime.
//
// The runtime never frees: everything it allocates lives as long as the
// method that asked for it, and the caller reclaims the whole arena at once.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace rt {

// A piece of memory the caller owns (an arena, a planned buffer).
struct Span {
  uint8_t* data;
  size_t size;
};

// Read-only bytes (program data, a segment, a delegate payload).
struct ConstBytes {
  const uint8_t* data;
  size_t size;
};

class Arena {
 public:
  Arena() : base_(nullptr), size_(0), used_(0) {}
  Arena(void* base, size_t size) : base_(static_cast<uint8_t*>(base)), size_(size), used_(0) {}

  // `size` bytes aligned to `align` (a power of two); nullptr when they do not fit.
  void* allocate(size_t size, size_t align);

  // `count` zeroed objects of T; nullptr on overflow or when they do not fit.
  template <typename T>
  T* allocate_array(size_t count) {
    if (count > SIZE_MAX / sizeof(T)) {
      return nullptr;
    }
    return static_cast<T*>(allocate_zeroed(count * sizeof(T), alignof(T)));
  }

  void* allocate_zeroed(size_t size, size_t align);

  size_t used() const { return used_; }
  size_t size() const { return size_; }
  size_t available() const { return size_ - used_; }
  // Bytes an allocation of `size` at `align` would take now, padding included.
  size_t cost(size_t size, size_t align) const;

 private:
  uint8_t* base_;
  size_t size_;
  size_t used_;
};

// Round `value` up to a multiple of `align` (a power of two). Saturates at SIZE_MAX.
inline size_t align_up(size_t value, size_t align) {
  size_t mask = align - 1;
  return value > SIZE_MAX - mask ? SIZE_MAX : (value + mask) & ~mask;
}

}  // namespace rt
