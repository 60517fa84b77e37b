// The driver tests' job (driver_test.cpp, driver_u85_test.cpp): a command stream, weights in
// region 0 and the scratch in regions 1 and 2, in static buffers; and the 40-bit address
// halves the driver writes for them (QBASE, BASEPn).
#pragma once

#include <stdint.h>

#include "driver.h"

namespace test {

alignas(16) inline uint8_t g_stream[16];
alignas(16) inline uint8_t g_weights[32];
alignas(16) inline uint8_t g_scratch[64];

inline ethosu::Job job() {
  ethosu::Job j = {};
  j.command_stream = g_stream;
  j.command_stream_size = sizeof(g_stream);
  j.regions[0] = g_weights;
  j.region_sizes[0] = sizeof(g_weights);
  j.regions[1] = g_scratch;
  j.region_sizes[1] = sizeof(g_scratch);
  j.regions[2] = g_scratch;
  j.region_sizes[2] = sizeof(g_scratch);
  j.num_regions = 3;
  return j;
}

inline uint32_t u32(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }
inline uint32_t high(const void* p) {
  return static_cast<uint32_t>(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)) >> 32);
}

}  // namespace test
