// Fuzzing the program loader, the method loader and execution with the
// firmware's real kernels: nothing from a .pte (or a .bpte's program, found
// in place by runner::program_in_bundle) may crash the runtime.
//
// Built with libFuzzer when clang is there (-DSDK_LIBFUZZER), otherwise with
// the plain mutation driver (fuzz_driver.h):
//   fuzz_program [--iterations N] [--seed S] [--write-seeds DIR] SEED.pte...
// Each iteration takes a seed program, applies a few random mutations (bit
// flips, byte overwrites, small integers in place, truncation, chunk copies)
// and runs it. Any crash, sanitizer report or hang ends the run non-zero.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_driver.h"
#include "rt/method.h"
#include "rt/program.h"
#include "runner.h"
#include "test_support.h"

namespace {

alignas(16) uint8_t g_metadata[1 << 18];
alignas(16) uint8_t g_planned[1 << 20];
alignas(16) uint8_t g_scratch[1 << 12];

// True when the program passed verification (whatever its method did).
bool run_one(const uint8_t* data, size_t size) {
  test::Bytes program_bytes(data, size);  // aligned copy, exactly `size` bytes readable
  rt::ConstBytes bytes{program_bytes.data(), size};
  if (runner::is_bundle(bytes) && runner::program_in_bundle(bytes, &bytes) != rt::Error::Ok) {
    return false;  // a .bpte (the link's LOAD_SLOT takes them): its program, in place
  }
  rt::Result<rt::Program> program = rt::Program::load(bytes.data, bytes.size);
  if (!program.ok()) {
    return false;
  }
  rt::Span arena = {g_planned, sizeof(g_planned)};
  rt::MethodMemory memory = {{g_metadata, sizeof(g_metadata)}, &arena, 1,
                             {g_scratch, sizeof(g_scratch)}};
  rt::Result<rt::Method> method = rt::Method::load(program.get(), nullptr, memory);
  if (!method.ok()) {
    return true;
  }
  method.get().set_max_steps(10000);
  (void)method.get().execute();
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  run_one(data, size);
  return 0;
}

#ifndef SDK_LIBFUZZER

namespace {

// Small or boundary 32-bit values, where offsets and indices live.
const uint32_t kValues[] = {0, 1, 0xFFFFFFFF, 2, 4, 8, 16, 0x7FFFFFFF, 0x80000000, 255};

void add_seeds(const fuzz::Input& file, std::vector<fuzz::Input>* seeds) {
  if (!file.empty()) seeds->push_back(file);
}

}  // namespace

int main(int argc, char** argv) {
  const fuzz::Target target = {
      "fuzz_program", "passed verification",
      {kValues, sizeof(kValues) / sizeof(kValues[0]), true, 16, false},
      add_seeds, nullptr, nullptr, run_one,
  };
  return fuzz::run_driver(target, argc, argv);
}

#endif  // SDK_LIBFUZZER
