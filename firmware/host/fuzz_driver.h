// The plain mutation driver the host fuzz targets share (fuzz_link, fuzz_program,
// fuzz_vela_payload), for builds without libFuzzer; host-only test code.
//
//   NAME [--iterations N] [--seed S] [--write-seeds DIR] FILE...
// Each FILE becomes seeds through the target's `add_seeds`; each iteration takes a seed, may
// `prepare` it (a target's other form of the same input), applies 1-4 random mutations and
// runs it. --write-seeds DIR writes the seeds as files and ends: a libFuzzer corpus made by
// the same code (bench/fuzz.py). A crash, a sanitizer report or a hang ends the run non-zero.
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

namespace fuzz {

using Input = std::vector<uint8_t>;

// xorshift64: the same run for the same --seed, on every host.
class Random {
 public:
  void seed(uint64_t s) { state_ = (s + 1) * 0x9E3779B97F4A7C15ull; }
  uint64_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }

 private:
  uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

// What a target's mutations look like.
struct Mutations {
  const uint32_t* values;  // boundary 32-bit words put in place: sizes, offsets, indices
  size_t value_count;
  bool aligned_values;  // words only at 4-byte aligned offsets (flatbuffers, Vela blocks)
  size_t max_chunk;     // the longest run copied from elsewhere in the input
  // A byte stream (the link): chunks are inserted rather than copied over, bytes erased,
  // zeros (frame delimiters) put in the wrong place, and the first byte (the mode) is kept.
  bool stream;
};

inline void mutate(Random& r, Input& bytes, const Mutations& m) {
  const size_t keep = m.stream ? 1 : 0;
  int count = 1 + static_cast<int>(r.below(4));
  for (int i = 0; i < count && bytes.size() > keep; ++i) {
    size_t at = keep + r.below(bytes.size() - keep);
    switch (r.below(m.stream ? 7 : 6)) {
      case 0:
        bytes[at] ^= static_cast<uint8_t>(1u << r.below(8));
        break;
      case 1:
        bytes[at] = static_cast<uint8_t>(r.next());
        break;
      case 2: {
        uint32_t v = m.values[r.below(m.value_count)];
        if (m.aligned_values) at &= ~size_t{3};
        if (at + 4 <= bytes.size()) memcpy(&bytes[at], &v, 4);
        break;
      }
      case 3:
        bytes.resize(at);
        break;
      case 4: {
        size_t from = r.below(bytes.size());
        size_t n = r.below(m.max_chunk);
        n = n < bytes.size() - from ? n : bytes.size() - from;
        if (m.stream) {  // repeated pieces: retransmissions, duplicated chunks
          Input piece(bytes.begin() + static_cast<long>(from),
                      bytes.begin() + static_cast<long>(from + n));
          bytes.insert(bytes.begin() + static_cast<long>(at), piece.begin(), piece.end());
        } else {
          for (size_t k = 0; k < n && at + k < bytes.size(); ++k) bytes[at + k] = bytes[from + k];
        }
        break;
      }
      case 5:
        if (m.stream) {
          bytes[at] = 0;
        } else {
          bytes[at] = static_cast<uint8_t>(bytes[at] + 1);
        }
        break;
      default:
        bytes.erase(bytes.begin() + static_cast<long>(at));
        break;
    }
  }
}

// A target of the plain driver.
struct Target {
  const char* name;
  const char* accepted;  // what `run` returning true means, for the summary line
  Mutations mutations;
  // Seeds from one file's bytes.
  void (*add_seeds)(const Input& file, std::vector<Input>* seeds);
  // Optional: turns a seed into another form before mutation; counted when it returns true.
  bool (*prepare)(Random& r, Input* input);
  const char* prepared;  // what `prepare` returning true means
  // Runs one input; true when the target accepted it.
  bool (*run)(const uint8_t* data, size_t size);
};

inline bool read_file(const char* path, Input* out) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return false;
  uint8_t chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) out->insert(out->end(), chunk, chunk + n);
  fclose(f);
  return !out->empty();
}

inline int write_seeds(const Target& t, const char* dir, const std::vector<Input>& seeds) {
  for (size_t i = 0; i < seeds.size(); ++i) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/seed-%04zu", dir, i);
    FILE* f = fopen(path, "wb");
    bool ok = f != nullptr && fwrite(seeds[i].data(), 1, seeds[i].size(), f) == seeds[i].size();
    if (f != nullptr && fclose(f) != 0) ok = false;
    if (!ok) {
      fprintf(stderr, "%s: cannot write %s\n", t.name, path);
      return 2;
    }
  }
  printf("%s: %zu seeds written to %s\n", t.name, seeds.size(), dir);
  return 0;
}

// The driver's main: 0 when every run ended, 2 for a usage error.
inline int run_driver(const Target& t, int argc, char** argv) {
  Random random;
  long iterations = 1000;
  const char* seeds_dir = nullptr;
  std::vector<Input> seeds;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = strtol(argv[++i], nullptr, 0);
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      random.seed(strtoull(argv[++i], nullptr, 0));
    } else if (strcmp(argv[i], "--write-seeds") == 0 && i + 1 < argc) {
      seeds_dir = argv[++i];
    } else {
      Input file;
      if (!read_file(argv[i], &file)) {
        fprintf(stderr, "%s: cannot read %s\n", t.name, argv[i]);
        return 2;
      }
      t.add_seeds(file, &seeds);
    }
  }
  if (seeds.empty()) t.add_seeds(Input(), &seeds);  // a target may seed itself
  if (seeds.empty()) {
    fprintf(stderr, "usage: %s [--iterations N] [--seed S] [--write-seeds DIR] SEED...: "
            "no seed to start from\n", t.name);
    return 2;
  }
  if (seeds_dir != nullptr) return write_seeds(t, seeds_dir, seeds);
  long accepted_seeds = 0;
  for (const Input& seed : seeds) accepted_seeds += t.run(seed.data(), seed.size()) ? 1 : 0;
  long accepted = 0;
  long prepared = 0;
  for (long it = 0; it < iterations; ++it) {
    Input input = seeds[random.below(seeds.size())];
    if (t.prepare != nullptr && t.prepare(random, &input)) ++prepared;
    mutate(random, input, t.mutations);
    accepted += t.run(input.data(), input.size()) ? 1 : 0;
  }
  printf("%s: %ld iterations, %ld %s, %ld of %zu seeds %s", t.name, iterations, accepted,
         t.accepted, accepted_seeds, seeds.size(), t.accepted);
  if (t.prepare != nullptr) printf(", %ld %s", prepared, t.prepared);
  printf("\n");
  return 0;
}

}  // namespace fuzz
