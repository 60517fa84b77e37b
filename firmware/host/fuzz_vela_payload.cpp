// Fuzzing the Ethos-U delegate's Vela payload parser: nothing in a payload may crash it, and
// what it accepts must hold what the backend and the driver rely on.
//
// Built with libFuzzer when clang is there (-DSDK_LIBFUZZER), otherwise with the plain
// mutation driver below:
//   fuzz_vela_payload [--iterations N] [--seed S] SEED...
// A SEED is a Vela payload or a whole .pte (each 16-byte aligned run of a `vela_bin_stream`
// header to the end of the file seeds the loop; the parser must stop at `vela_end_stream`
// or refuse the rest). Mutations: bit flips, byte overwrites, boundary 32-bit values,
// truncation, chunk copies. A crash, a sanitizer report or a broken invariant ends the run.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "../ethosu/vela_payload.h"

namespace {

alignas(16) uint8_t g_buffer[1 << 20];

// The view must point inside the payload and hold what the parser promised.
void check_view(const ethosu::VelaPayload& v, const uint8_t* data, size_t size) {
  auto inside = [&](const uint8_t* p, size_t n) {
    return p >= data && p <= data + size && n <= static_cast<size_t>(data + size - p);
  };
  bool ok = inside(v.cmd_data, v.cmd_data_size) &&
            inside(v.command_stream, v.command_stream_size) && inside(v.weights, v.weights_size) &&
            v.command_stream_size % 4 == 0 && v.command_stream_size > 0 &&
            (v.command_stream - data) % 16 == 0 && v.inputs.count <= ethosu::kMaxIoRecords &&
            v.outputs.count >= 1 && v.outputs.count <= ethosu::kMaxIoRecords;
  for (const ethosu::IoTable* t : {&v.inputs, &v.outputs}) {
    ok = ok && inside(t->records, t->count * ethosu::kIoRecordBytes);
    for (uint32_t i = 0; ok && i < t->count; ++i) {
      ethosu::IoRecord r = ethosu::io_record(*t, i);
      ok = r.offset + static_cast<uint64_t>(r.nbytes) <= v.scratch_size &&
           (r.elem_size == 1 || r.elem_size == 2 || r.elem_size == 4);
    }
  }
  if (!ok) {
    fprintf(stderr, "fuzz_vela_payload: accepted a payload that breaks the view's invariants\n");
    abort();
  }
}

bool run_one(const uint8_t* data, size_t size) {
  if (size > sizeof(g_buffer)) {
    size = sizeof(g_buffer);
  }
  memcpy(g_buffer, data, size);
  ethosu::VelaPayload view;
  if (ethosu::parse_vela_payload(g_buffer, size, &view) != rt::Error::Ok) {
    return false;
  }
  check_view(view, g_buffer, size);
  return true;
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
      case 2: {  // sizes, counts, offsets and action words are 32-bit
        static const uint32_t kValues[] = {0,    1,          2,          4,          5,
                                           16,   36,         0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                                           0x00010002, 0xFFFF0000, 0x31504F43};
        uint32_t v = kValues[below(sizeof(kValues) / sizeof(kValues[0]))];
        at &= ~size_t{3};
        if (at + 4 <= bytes.size()) memcpy(&bytes[at], &v, 4);
        break;
      }
      case 3:
        bytes.resize(at);
        break;
      case 4: {
        size_t from = below(bytes.size());
        size_t n = below(48);
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

bool read_all(const char* path, std::vector<uint8_t>* out) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return false;
  uint8_t chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) out->insert(out->end(), chunk, chunk + n);
  fclose(f);
  return !out->empty();
}

// Payloads in a file: every 16-byte aligned `vela_bin_stream` header starts one, which ends
// after the first `vela_end_stream` block header found by walking the block sizes (or at the
// end of the file).
void add_seeds(const std::vector<uint8_t>& file, std::vector<std::vector<uint8_t>>* seeds) {
  static const char kStart[16] = "vela_bin_stream";
  static const char kEnd[16] = "vela_end_stream";
  for (size_t at = 0; at + 16 <= file.size(); at += 16) {
    if (memcmp(&file[at], kStart, 16) != 0) continue;
    size_t end = file.size();
    for (size_t pos = at; pos + 32 <= file.size();) {
      uint32_t size;
      memcpy(&size, &file[pos + 16], 4);
      size_t next = pos + 32 + ((static_cast<size_t>(size) + 15) & ~size_t{15});
      if (memcmp(&file[pos], kEnd, 16) == 0) {
        end = next <= file.size() ? next : file.size();
        break;
      }
      if (next <= pos || next > file.size()) break;
      pos = next;
    }
    seeds->emplace_back(file.begin() + static_cast<long>(at), file.begin() + static_cast<long>(end));
  }
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 1000;
  std::vector<std::vector<uint8_t>> seeds;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = strtol(argv[++i], nullptr, 0);
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      g_state = (strtoull(argv[++i], nullptr, 0) + 1) * 0x9E3779B97F4A7C15ull;
    } else {
      std::vector<uint8_t> file;
      if (!read_all(argv[i], &file)) {
        fprintf(stderr, "fuzz_vela_payload: cannot read %s\n", argv[i]);
        return 2;
      }
      add_seeds(file, &seeds);
    }
  }
  if (seeds.empty()) {
    fprintf(stderr, "fuzz_vela_payload: no Vela payload in the seeds\n");
    return 2;
  }
  long accepted_seeds = 0;
  for (const auto& seed : seeds) {
    accepted_seeds += run_one(seed.data(), seed.size()) ? 1 : 0;
  }
  long accepted = 0;
  for (long it = 0; it < iterations; ++it) {
    std::vector<uint8_t> bytes = seeds[below(seeds.size())];
    mutate(bytes);
    accepted += run_one(bytes.data(), bytes.size()) ? 1 : 0;
  }
  printf("fuzz_vela_payload: %ld iterations, %ld accepted, %ld of %zu seeds accepted\n",
         iterations, accepted, accepted_seeds, seeds.size());
  return 0;
}

#endif  // SDK_LIBFUZZER
