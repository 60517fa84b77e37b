// The board's AXI timing adapters (board.yaml npu_memories.timing_adapters; docs/memory.md):
// a Vela program is compiled for a memory speed, and on the Corstone-300 FVP and FPGA that
// speed is what the adapters on the NPU's ports are programmed to. The backend finds the
// configuration a delegate was compiled for in its compile flags and writes that
// configuration's adapter settings, through the NPU platform's write32 at the adapters'
// offsets from the NPU's base, before the delegate's job.
#ifndef SDK_ETHOSU_TIMING_ADAPTERS_H
#define SDK_ETHOSU_TIMING_ADAPTERS_H

#include <stddef.h>
#include <stdint.h>

#include "rt/error.h"

namespace ethosu {

constexpr uint32_t kMaxTimingAdapters = 2;        // one per U55 AXI port
constexpr uint32_t kTimingAdapterRegisters = 9;   // MAXR .. MODE (board_config.h's order)
constexpr int32_t kNoTimingConfig = -1;

// One Vela (system config, memory mode) the board documents, and its adapters' values.
struct TimingAdapterConfig {
  const char* system_config;
  const char* memory_mode;
  uint32_t values[kMaxTimingAdapters][kTimingAdapterRegisters];
};

struct TimingAdapters {
  uint32_t count;                        // adapters; 0: the board has none to program
  uint32_t offsets[kMaxTimingAdapters];  // each adapter's base, from the NPU's register base
  const uint32_t* register_offsets;      // kTimingAdapterRegisters, from an adapter's base
  const TimingAdapterConfig* configs;
  uint32_t config_count;
};

// The configuration a delegate's Vela flags (its compile spec `compile_flags`, not
// NUL-terminated, from the program) were compiled for: *index into `adapters.configs`, or
// kNoTimingConfig when the board has no adapters or the flags name no system config and memory
// mode (`--system-config=X --memory-mode=Y`). A pair the board does not document is an error
// that names it: the board could not run the program at the speed it was compiled for.
rt::Error find_timing_config(const TimingAdapters& adapters, const uint8_t* flags, size_t size,
                             int32_t* index);

}  // namespace ethosu

#endif  // SDK_ETHOSU_TIMING_ADAPTERS_H
