// Runs the TESTs linked into this binary: `<test> [--programs DIR] [FILTER]`.
#include <stdio.h>
#include <string.h>

#include <string>

#include "test_harness.h"
#include "test_support.h"

namespace test {
namespace {

Case* g_first = nullptr;
Case* g_last = nullptr;
int g_failures_in_case = 0;
const char* g_programs_dir = nullptr;

}  // namespace

int add_case(Case* c) {
  if (g_last == nullptr) {
    g_first = c;
  } else {
    g_last->next = c;
  }
  g_last = c;
  return 0;
}

void record_failure(const char* file, int line, const char* what) {
  printf("    %s:%d: %s\n", file, line, what);
  ++g_failures_in_case;
}

const char* programs_dir() { return g_programs_dir; }

Bytes fixture_program(const char* name) {
  if (programs_dir() == nullptr) {
    return Bytes();
  }
  return read_file(std::string(programs_dir()) + "/" + name);
}

}  // namespace test

int main(int argc, char** argv) {
  const char* filter = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--programs") == 0 && i + 1 < argc) {
      test::g_programs_dir = argv[++i];
    } else {
      filter = argv[i];
    }
  }
  int passed = 0;
  int failed = 0;
  for (test::Case* c = test::g_first; c != nullptr; c = c->next) {
    if (filter != nullptr && strstr(c->name, filter) == nullptr) {
      continue;
    }
    test::g_failures_in_case = 0;
    c->fn();
    if (test::g_failures_in_case == 0) {
      printf("PASS %s\n", c->name);
      ++passed;
    } else {
      printf("FAIL %s\n", c->name);
      ++failed;
    }
    fflush(stdout);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
