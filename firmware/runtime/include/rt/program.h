// A verified ExecuTorch program (.pte) in caller-owned memory.
//
// Program::load checks everything before anything is read through it: the
// 'ET12' identifier, the 'eh00' extended header (program size, segment base
// and size), the flatbuffer (Verifier), and that every segment, the
// constant segment and the delegate data lie inside the buffer. The program
// keeps pointing into the caller's buffer: it must stay alive and unchanged.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/arena.h"
#include "rt/error.h"

namespace rt {

// The buffer must be aligned to this: the flatbuffer's 8-byte fields and the
// 16-byte aligned constant and delegate data are read in place.
constexpr size_t kProgramAlignment = 16;

class Program {
 public:
  Program() = default;

  [[nodiscard]] static Result<Program> load(const void* data, size_t size);

  // The verified flatbuffer root (executorch_flatbuffer::Program); opaque
  // here so that users of this header need no flatbuffers headers.
  const void* root() const { return root_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  size_t flatbuffer_size() const { return flatbuffer_size_; }

  size_t num_methods() const;
  // Name of method `index` (NUL-terminated, inside the program); nullptr out of range.
  const char* method_name(size_t index) const;

  // The bytes of segment `index`, bounds-checked at load.
  Result<ConstBytes> segment(size_t index) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t flatbuffer_size_ = 0;
  size_t segment_base_ = 0;  // offset of segment data in the buffer (0: none)
  size_t segment_data_size_ = 0;
  const void* root_ = nullptr;
};

}  // namespace rt
