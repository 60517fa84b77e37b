// A minimal unit-test harness for the host build (no third-party framework).
//
//   TEST(program_rejects_bad_identifier) { CHECK_ERROR(rt::Program::load(...), InvalidProgram); }
//
// test_main.cpp runs every TEST (or those whose name contains argv's filter),
// prints one line per test and "N passed, M failed", and exits non-zero on a failure.
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rt/error.h"

namespace test {

struct Case {
  const char* name;
  void (*fn)();
  Case* next;
};

int add_case(Case* c);
void record_failure(const char* file, int line, const char* what);
// Folder of programs made by the pytest fixture (--programs DIR); nullptr when not given.
const char* programs_dir();

template <typename T>
rt::Error error_of(const rt::Result<T>& r) {
  return r.error();
}
inline rt::Error error_of(rt::Error e) { return e; }

}  // namespace test

#define TEST(name)                                                  \
  static void test_##name();                                        \
  static test::Case test_case_##name = {#name, test_##name, nullptr}; \
  static int test_added_##name = test::add_case(&test_case_##name); \
  static void test_##name()

#define CHECK(cond)                                      \
  do {                                                   \
    if (!(cond)) {                                       \
      test::record_failure(__FILE__, __LINE__, #cond);   \
      return;                                            \
    }                                                    \
  } while (0)

#define CHECK_EQ(a, b)                                                                       \
  do {                                                                                       \
    long long check_a_ = static_cast<long long>(a);                                          \
    long long check_b_ = static_cast<long long>(b);                                          \
    if (check_a_ != check_b_) {                                                              \
      char check_text_[160];                                                                 \
      snprintf(check_text_, sizeof(check_text_), "%s == %s (%lld != %lld)", #a, #b, check_a_, \
               check_b_);                                                                    \
      test::record_failure(__FILE__, __LINE__, check_text_);                                 \
      return;                                                                                \
    }                                                                                        \
  } while (0)

// The expression fails with rt::Error::<code> and a non-empty reason.
#define CHECK_ERROR(expr, code)                                                               \
  do {                                                                                        \
    rt::clear_error();                                                                        \
    rt::Error check_err_ = test::error_of(expr);                                              \
    if (check_err_ != rt::Error::code || rt::last_error_reason()[0] == '\0') {                \
      char check_text_[320];                                                                  \
      snprintf(check_text_, sizeof(check_text_), "%s: expected %s, got %s (reason: %s)", #expr, \
               #code, rt::error_name(check_err_), rt::last_error_reason());                   \
      test::record_failure(__FILE__, __LINE__, check_text_);                                  \
      return;                                                                                 \
    }                                                                                         \
  } while (0)

// The last reason contains `text`.
#define CHECK_REASON(text)                                                                 \
  do {                                                                                     \
    if (strstr(rt::last_error_reason(), (text)) == nullptr) {                              \
      char check_text_[320];                                                               \
      snprintf(check_text_, sizeof(check_text_), "reason \"%s\" lacks \"%s\"",            \
               rt::last_error_reason(), (text));                                           \
      test::record_failure(__FILE__, __LINE__, check_text_);                               \
      return;                                                                              \
    }                                                                                      \
  } while (0)

#define CHECK_OK(expr)                                                                        \
  do {                                                                                        \
    rt::Error check_err_ = test::error_of(expr);                                              \
    if (check_err_ != rt::Error::Ok) {                                                        \
      char check_text_[320];                                                                  \
      snprintf(check_text_, sizeof(check_text_), "%s: %s (%s)", #expr,                        \
               rt::error_name(check_err_), rt::last_error_reason());                          \
      test::record_failure(__FILE__, __LINE__, check_text_);                                  \
      return;                                                                                 \
    }                                                                                         \
  } while (0)
