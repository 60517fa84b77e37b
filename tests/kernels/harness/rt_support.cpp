// Stand-ins for the runtime functions the kernels call (error reasons, dtype
// and tag names), so the kernels build and run without the firmware runtime.
#include <stdarg.h>
#include <stdio.h>

#include "rt/error.h"
#include "rt/scalar_type.h"
#include "rt/value.h"

namespace rt {
namespace {
char g_reason[256];
}

const char* error_name(Error e) {
  static const char* const kNames[] = {
      "Ok",           "Internal",      "InvalidArgument", "InvalidProgram", "NotSupported",
      "OperatorMissing", "BackendMissing", "OutOfMemory", "DtypeMismatch", "ShapeMismatch",
      "InputMismatch", "DelegateFailed", "KernelFailed",  "InvalidInputs",  "NoHardware",
  };
  const unsigned i = static_cast<unsigned>(e);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "Unknown";
}

Error fail(Error code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_reason, sizeof(g_reason), fmt, ap);
  va_end(ap);
  return code;
}

const char* last_error_reason() { return g_reason; }

void clear_error() { g_reason[0] = '\0'; }

size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Bool:
      return 1;
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16:
    case ScalarType::UInt16:
      return 2;
    case ScalarType::Int:
    case ScalarType::Float:
    case ScalarType::UInt32:
      return 4;
    case ScalarType::Long:
    case ScalarType::Double:
    case ScalarType::UInt64:
      return 8;
    default:
      return 0;
  }
}

const char* scalar_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return "Byte";
    case ScalarType::Char: return "Char";
    case ScalarType::Short: return "Short";
    case ScalarType::Int: return "Int";
    case ScalarType::Long: return "Long";
    case ScalarType::Half: return "Half";
    case ScalarType::Float: return "Float";
    case ScalarType::Double: return "Double";
    case ScalarType::Bool: return "Bool";
    case ScalarType::BFloat16: return "BFloat16";
    case ScalarType::UInt16: return "UInt16";
    case ScalarType::UInt32: return "UInt32";
    case ScalarType::UInt64: return "UInt64";
    default: return "Unknown";
  }
}

const char* tag_name(Tag t) {
  static const char* const kNames[] = {"None",   "Int",     "Double",     "Bool",       "Tensor", "String",
                                       "IntList", "DoubleList", "BoolList", "TensorList", "OptionalTensorList"};
  const unsigned i = static_cast<unsigned>(t);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "Unknown";
}

}  // namespace rt
