// Tensor element types, numbered exactly as ExecuTorch's scalar_type.fbs.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace rt {

enum class ScalarType : int8_t {
  Byte = 0,    // uint8
  Char = 1,    // int8
  Short = 2,   // int16
  Int = 3,     // int32
  Long = 4,    // int64
  Half = 5,    // float16
  Float = 6,   // float32
  Double = 7,  // float64
  Bool = 11,
  QInt8 = 12,
  QUInt8 = 13,
  QInt32 = 14,
  BFloat16 = 15,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
};

// Bytes per element; 0 for types this runtime does not support.
size_t element_size(ScalarType t);

// Name as ExecuTorch prints it ("Float", "Short"); "Unknown" otherwise.
const char* scalar_type_name(ScalarType t);

// One bit per ScalarType value, for dtype masks (selective build).
constexpr uint32_t dtype_bit(ScalarType t) { return 1u << static_cast<uint32_t>(t); }

}  // namespace rt
