// Fuzzing the Ethos-U delegate's Vela payload parser: nothing in a payload may crash it, and
// what it accepts must hold what the backend and the driver rely on. The timing adapters'
// lookup of a delegate's compile flags (timing_adapters.cpp) takes the same bytes.
//
// Built with libFuzzer when clang is there (-DSDK_LIBFUZZER), otherwise with the plain
// mutation driver (fuzz_driver.h):
//   fuzz_vela_payload [--iterations N] [--seed S] [--write-seeds DIR] SEED...
// An input (a SEED, or a libFuzzer input) is a Vela payload or a whole .pte ('ET12' at byte
// 4): a .pte's payloads are each 16-byte aligned run from a `vela_bin_stream` header to the
// end of the first `vela_end_stream` block, found as the plain driver and libFuzzer both read
// them (for_each_payload), so a corpus of .pte files reaches the parser in either build.
// Mutations: bit flips, byte overwrites, boundary 32-bit values, truncation, chunk copies.
// A crash, a sanitizer report or a broken invariant ends the run.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ethosu/timing_adapters.h"
#include "../ethosu/vela_payload.h"
#include "fuzz_driver.h"

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

// The delegate's compile flags come from the same program: any bytes, read as flags by the
// timing adapters' lookup, end in a config index within the table or kNoTimingConfig.
void check_timing_lookup(const uint8_t* data, size_t size) {
  static const uint32_t kOffsets[ethosu::kTimingAdapterRegisters] = {0,  4,  8,  12, 16,
                                                                     20, 24, 28, 40};
  static const ethosu::TimingAdapterConfig kConfigs[] = {
      {"Ethos_U55_High_End_Embedded", "Shared_Sram", {}}, {"S", "M", {}}};
  const ethosu::TimingAdapters adapters = {2, {0x1000, 0x1200}, kOffsets, kConfigs, 2};
  int32_t index = 0;
  rt::Error err = ethosu::find_timing_config(adapters, data, size, &index);
  if (index < ethosu::kNoTimingConfig || index >= 2 || (err != rt::Error::Ok && index != -1)) {
    fprintf(stderr, "fuzz_vela_payload: timing config lookup gave index %ld\n",
            static_cast<long>(index));
    abort();
  }
}

bool run_one(const uint8_t* data, size_t size) {
  if (size > sizeof(g_buffer)) {
    size = sizeof(g_buffer);
  }
  memcpy(g_buffer, data, size);
  check_timing_lookup(g_buffer, size);
  ethosu::VelaPayload view;
  if (ethosu::parse_vela_payload(g_buffer, size, &view) != rt::Error::Ok) {
    return false;
  }
  check_view(view, g_buffer, size);
  return true;
}

// Where a payload that starts at `at` ends: after the first `vela_end_stream` block header
// found by walking the block sizes (with its block), or at the end of the input.
size_t payload_end(const uint8_t* data, size_t size, size_t at) {
  static const char kEnd[16] = "vela_end_stream";
  for (size_t pos = at; pos + 32 <= size;) {
    uint32_t block;
    memcpy(&block, data + pos + 16, 4);
    size_t next = pos + 32 + ((static_cast<size_t>(block) + 15) & ~size_t{15});
    if (memcmp(data + pos, kEnd, 16) == 0) return next <= size ? next : size;
    if (next <= pos || next > size) break;
    pos = next;
  }
  return size;
}

// Calls fn(payload, size) for each Vela payload in a .pte, or once with the whole input when
// it is not a .pte (a raw payload).
template <typename Fn>
void for_each_payload(const uint8_t* data, size_t size, Fn fn) {
  static const char kStart[16] = "vela_bin_stream";
  if (size < 8 || memcmp(data + 4, "ET12", 4) != 0) {
    fn(data, size);
    return;
  }
  for (size_t at = 0; at + 16 <= size; at += 16) {
    if (memcmp(data + at, kStart, 16) == 0) fn(data + at, payload_end(data, size, at) - at);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for_each_payload(data, size, run_one);
  return 0;
}

#ifndef SDK_LIBFUZZER

namespace {

// Sizes, counts, offsets and action words are 32-bit.
const uint32_t kValues[] = {0,          1,          2,          4,         5,
                            16,         36,         0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                            0x00010002, 0xFFFF0000, 0x31504F43};

void add_seeds(const fuzz::Input& file, std::vector<fuzz::Input>* seeds) {
  if (file.empty()) return;
  for_each_payload(file.data(), file.size(), [seeds](const uint8_t* p, size_t n) {
    seeds->emplace_back(p, p + n);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const fuzz::Target target = {
      "fuzz_vela_payload", "accepted",
      {kValues, sizeof(kValues) / sizeof(kValues[0]), true, 48, false},
      add_seeds, nullptr, nullptr, run_one,
  };
  return fuzz::run_driver(target, argc, argv);
}

#endif  // SDK_LIBFUZZER
