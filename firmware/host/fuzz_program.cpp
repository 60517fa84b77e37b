// Fuzzing the program loader, the method loader and execution with the
// firmware's real kernels: nothing from a .pte may crash the runtime.
//
// Built with libFuzzer when clang is there (-DSDK_LIBFUZZER), otherwise with
// the plain mutation driver below:
//   fuzz_program [--iterations N] [--seed S] SEED.pte...
// Each iteration takes a seed program, applies a few random mutations (bit
// flips, byte overwrites, small integers in place, truncation, chunk copies)
// and runs it. Any crash, sanitizer report or hang ends the run non-zero.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "rt/method.h"
#include "rt/program.h"
#include "test_support.h"

namespace {

alignas(16) uint8_t g_metadata[1 << 18];
alignas(16) uint8_t g_planned[1 << 20];
alignas(16) uint8_t g_scratch[1 << 12];

void run_one(const uint8_t* data, size_t size) {
  test::Bytes program_bytes(data, size);  // aligned copy, exactly `size` bytes readable
  rt::Result<rt::Program> program = rt::Program::load(program_bytes.data(), size);
  if (!program.ok()) {
    return;
  }
  rt::Span arena = {g_planned, sizeof(g_planned)};
  rt::MethodMemory memory = {{g_metadata, sizeof(g_metadata)}, &arena, 1,
                             {g_scratch, sizeof(g_scratch)}};
  rt::Result<rt::Method> method = rt::Method::load(program.get(), nullptr, memory);
  if (!method.ok()) {
    return;
  }
  method.get().set_max_steps(10000);
  (void)method.get().execute();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  run_one(data, size);
  return 0;
}

#ifndef SDK_LIBFUZZER

namespace {

uint64_t g_state = 0x9E3779B97F4A7C15ull;

uint64_t next_random() {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return g_state;
}

size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next_random() % n); }

void mutate(std::vector<uint8_t>& bytes) {
  int mutations = 1 + static_cast<int>(below(4));
  for (int m = 0; m < mutations && !bytes.empty(); ++m) {
    size_t at = below(bytes.size());
    switch (below(6)) {
      case 0:
        bytes[at] ^= static_cast<uint8_t>(1u << below(8));
        break;
      case 1:
        bytes[at] = static_cast<uint8_t>(next_random());
        break;
      case 2: {  // a small or boundary 32-bit value, where offsets and indices live
        static const int32_t kValues[] = {0, 1, -1, 2, 4, 8, 16, 0x7FFFFFFF, INT32_MIN, 255};
        int32_t v = kValues[below(sizeof(kValues) / sizeof(kValues[0]))];
        at &= ~size_t{3};
        if (at + 4 <= bytes.size()) memcpy(&bytes[at], &v, 4);
        break;
      }
      case 3:
        bytes.resize(at);
        break;
      case 4: {
        size_t from = below(bytes.size());
        size_t n = below(16);
        for (size_t i = 0; i < n && from + i < bytes.size() && at + i < bytes.size(); ++i) {
          bytes[at + i] = bytes[from + i];
        }
        break;
      }
      default:
        bytes[at] = static_cast<uint8_t>(bytes[at] + 1);
        break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 1000;
  std::vector<test::Bytes> seeds;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = strtol(argv[++i], nullptr, 0);
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      g_state = (strtoull(argv[++i], nullptr, 0) + 1) * 0x9E3779B97F4A7C15ull;
    } else {
      test::Bytes seed = test::read_file(argv[i]);
      if (seed.size() == 0) {
        fprintf(stderr, "fuzz_program: cannot read %s\n", argv[i]);
        return 2;
      }
      seeds.push_back(std::move(seed));
    }
  }
  if (seeds.empty()) {
    fprintf(stderr, "usage: fuzz_program [--iterations N] [--seed S] SEED.pte...\n");
    return 2;
  }
  long loaded = 0;
  for (long it = 0; it < iterations; ++it) {
    const test::Bytes& seed = seeds[below(seeds.size())];
    std::vector<uint8_t> bytes(seed.data(), seed.data() + seed.size());
    mutate(bytes);
    test::Bytes copy(bytes.data(), bytes.size());
    if (rt::Program::load(copy.data(), copy.size()).ok()) {
      ++loaded;
    }
    run_one(bytes.data(), bytes.size());
  }
  printf("fuzz_program: %ld iterations, %ld mutated programs passed verification\n", iterations,
         loaded);
  return 0;
}

#endif  // SDK_LIBFUZZER
