// Tensor element types, numbered exactly as ExecuTorch's scalar_type.fbs (contract.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "contract.h"

namespace rt {

// Generated from sdk.dtypes.DTYPES (ExecuTorch's codes and names): contract.h.
using ScalarType = contract::ScalarType;

// Bytes per element; 0 for types this runtime does not support.
size_t element_size(ScalarType t);

// Name as ExecuTorch prints it ("Float", "Short"); "Unknown" otherwise.
const char* scalar_type_name(ScalarType t);

// One bit per ScalarType value, for dtype masks (selective build).
constexpr uint32_t dtype_bit(ScalarType t) { return 1u << static_cast<uint32_t>(t); }

}  // namespace rt
