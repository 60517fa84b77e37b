// Error names and the one reason buffer (see rt/error.h).
#include "rt/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

namespace rt {
namespace {

// Long enough for an operator name, a few indices and sizes. Longer reasons
// are cut, never overrun.
constexpr size_t kReasonCapacity = 224;
char g_reason[kReasonCapacity];

const char* const kErrorNames[] = {
    "Ok",           "Internal",       "InvalidArgument", "InvalidProgram", "NotSupported",
    "OperatorMissing", "BackendMissing", "OutOfMemory",  "DtypeMismatch",  "ShapeMismatch",
    "InputMismatch", "DelegateFailed", "KernelFailed",   "InvalidInputs",  "NoHardware",
    "BadMessage",
};

}  // namespace

const char* error_name(Error e) {
  size_t index = static_cast<size_t>(e);
  return index < sizeof(kErrorNames) / sizeof(kErrorNames[0]) ? kErrorNames[index] : "Unknown";
}

Error fail(Error code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(g_reason, kReasonCapacity, fmt, args);
  va_end(args);
  return code;
}

void add_context(const char* fmt, ...) {
  char prefix[96];
  va_list args;
  va_start(args, fmt);
  int written = vsnprintf(prefix, sizeof(prefix), fmt, args);
  va_end(args);
  if (written <= 0) {
    return;
  }
  size_t prefix_len = strlen(prefix);
  g_reason[kReasonCapacity - 1] = '\0';
  size_t reason_len = strlen(g_reason);
  // Shift the old reason right (dropping its tail if needed), then put the prefix and ": " first.
  size_t shift = prefix_len + 2;
  if (shift >= kReasonCapacity) {
    return;
  }
  size_t keep = reason_len;
  if (keep > kReasonCapacity - 1 - shift) {
    keep = kReasonCapacity - 1 - shift;
  }
  memmove(g_reason + shift, g_reason, keep);
  g_reason[shift + keep] = '\0';
  memcpy(g_reason, prefix, prefix_len);
  g_reason[prefix_len] = ':';
  g_reason[prefix_len + 1] = ' ';
}

namespace {

// Digits written backwards from the end of the buffer, then the sign.
NumberText number_text(uint64_t magnitude, bool negative) {
  NumberText out;
  char* p = out.text + sizeof(out.text) - 1;
  *p = '\0';
  do {
    *--p = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) {
    *--p = '-';
  }
  memmove(out.text, p, static_cast<size_t>(out.text + sizeof(out.text) - p));
  return out;
}

}  // namespace

NumberText uint_text(uint64_t value) { return number_text(value, false); }

NumberText int_text(int64_t value) {
  // The magnitude of INT64_MIN does not fit int64_t: negate in uint64_t.
  uint64_t magnitude = static_cast<uint64_t>(value);
  return number_text(value < 0 ? uint64_t{0} - magnitude : magnitude, value < 0);
}

const char* last_error_reason() { return g_reason; }

void clear_error() { g_reason[0] = '\0'; }

}  // namespace rt
