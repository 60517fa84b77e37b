// Error codes and failure reasons for the runtime, kernels and delegates.
//
// No exceptions on the target: every fallible call returns an Error. The
// human-readable reason for the most recent failure is kept in one static
// buffer (set by rt::fail) so the link can put it into its ERROR reply.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace rt {

// Stable codes: the firmware names them (error_name, sent with the code in the
// link's ERROR reply). Append only; never renumber.
enum class Error : uint8_t {
  Ok = 0,
  Internal = 1,          // a broken invariant inside the firmware
  InvalidArgument = 2,   // a kernel/delegate got arguments it cannot take
  InvalidProgram = 3,    // the .pte is malformed (magic, verifier, bounds)
  NotSupported = 4,      // valid program, feature not implemented here
  OperatorMissing = 5,   // no kernel registered for an operator
  BackendMissing = 6,    // no backend registered for a delegate id
  OutOfMemory = 7,       // a caller-given arena or table is too small
  DtypeMismatch = 8,     // a tensor's dtype is not what the op/delegate needs
  ShapeMismatch = 9,     // a tensor's shape/size is not what the op needs
  InputMismatch = 10,    // the inputs given do not match the program's inputs
  DelegateFailed = 11,   // a delegate (NPU) reported a failure
  KernelFailed = 12,     // a kernel failed for a reason not covered above
  InvalidInputs = 13,    // the input bundle is malformed
  NoHardware = 14,       // the hardware a delegate needs is absent (no NPU)
  BadMessage = 15,       // a host-link request out of place (kind, size, order, session)
};

// Name of an error code ("InvalidProgram"); "Unknown" for out-of-range values.
const char* error_name(Error e);

// Record `reason` (printf-style, integers and strings only) as the reason of
// the current failure and return `code`. Use as `return rt::fail(...)`.
Error fail(Error code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Reason recorded by the most recent fail(); "" when none.
const char* last_error_reason();

// Forget the recorded reason (start of a new operation).
void clear_error();

// Put "<context>: " in front of the recorded reason (e.g. which instruction
// failed); the reason's tail is cut if the whole does not fit.
void add_context(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// ---- Numbers and shapes in reasons ------------------------------------------------------
// The target's `long` is 32 bits and newlib-nano's printf has no %lld, so a 64-bit value given
// to "%lu" prints cut. ul() is for values that fit `unsigned long` everywhere (size_t,
// uint32_t): a wider argument does not compile on the target. 64-bit values (file offsets,
// IntList items, byte counts before they are checked) go through int_text()/uint_text() and
// "%s"; the text lives until the end of the statement that made it.
template <typename T>
constexpr unsigned long ul(T value) {
  static_assert(sizeof(T) <= sizeof(unsigned long), "64-bit value: print it with uint_text()");
  return static_cast<unsigned long>(value);
}

struct NumberText {
  char text[21];  // "-9223372036854775808"
};
NumberText int_text(int64_t value);
NumberText uint_text(uint64_t value);

// A value or an error. T must be trivially copyable-ish; no heap involved.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : value_(value), error_(Error::Ok) {}  // NOLINT
  Result(Error error) : value_(), error_(error) {}              // NOLINT
  bool ok() const { return error_ == Error::Ok; }
  Error error() const { return error_; }
  const T& get() const { return value_; }
  T& get() { return value_; }

 private:
  T value_;
  Error error_;
};

}  // namespace rt

// Return a failure with a reason unless `cond` holds.
#define RT_CHECK(cond, code, ...)              \
  do {                                         \
    if (!(cond)) {                             \
      return ::rt::fail((code), __VA_ARGS__);  \
    }                                          \
  } while (0)

// Propagate a failure from a call that returns rt::Error.
#define RT_TRY(expr)                 \
  do {                               \
    ::rt::Error rt_err_ = (expr);    \
    if (rt_err_ != ::rt::Error::Ok) { \
      return rt_err_;                \
    }                                \
  } while (0)
