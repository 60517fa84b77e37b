// Front-to-back allocation from caller-owned memory (see rt/arena.h).
#include "rt/arena.h"

#include <string.h>

namespace rt {

size_t Arena::cost(size_t size, size_t align) const {
  uintptr_t here = reinterpret_cast<uintptr_t>(base_) + used_;
  size_t padding = static_cast<size_t>((align - (here & (align - 1))) & (align - 1));
  return size > SIZE_MAX - padding ? SIZE_MAX : size + padding;
}

void* Arena::allocate(size_t size, size_t align) {
  size_t total = cost(size, align);
  if (base_ == nullptr || total > size_ - used_) {
    return nullptr;
  }
  uint8_t* result = base_ + used_ + (total - size);
  used_ += total;
  return result;
}

void* Arena::allocate_zeroed(size_t size, size_t align) {
  void* result = allocate(size, align);
  if (result != nullptr && size > 0) {
    memset(result, 0, size);
  }
  return result;
}

}  // namespace rt
