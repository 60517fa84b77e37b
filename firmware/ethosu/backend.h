// The rt::Backend "EthosUBackend": ExecuTorch Ethos-U delegates run on the board's Ethos-U
// (U55 or U85, board.yaml npu.kind).
//
//   init     parses and validates the Vela payload (the state keeps the parsed view, which
//            points into the program), checks the NPU is there and is what the stream was
//            compiled for (NoHardware / NotSupported with both values);
//   prepare  checks every boundary tensor of each call site against the NPU's record:
//            an integer dtype of the record's element size, the byte count, the shape (leading
//            1s aside; the backend does not permute layouts), and that the method's scratch
//            holds the NPU's scratch region;
//   execute  copies the inputs into the scratch at their record offsets, runs the NPU
//            (region 0 = the weights in place, 1 and 2 = the scratch), copies the outputs out.
//
// A board without an NPU (QEMU) runs the same code against a virtual NPU: the link's platform
// (hostlink::Server::virtual_u55_platform) carries the driver's register accesses to the host.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "rt/backend.h"
#include "vela_payload.h"

namespace ethosu {

constexpr const char* kBackendId = "EthosUBackend";

struct BackendState {
  VelaPayload payload;
  uint64_t last_cycles;   // NPU PMU cycles of the last execute
  uint64_t total_cycles;  // since init
  uint32_t executions;
  uint32_t delegate_index;
  int32_t timing_config;  // its platform.timing_adapters config, or kNoTimingConfig
  bool constants_clean;   // its command stream and weights written back at init
};

// Keep `platform` (copied), set up the driver over it and add the backend to the runtime's
// registry. Call once, before loading a program; fails when the registry refuses it.
rt::Error register_backend(const NpuPlatform& platform);

// The NPU interrupt: the board's IRQ handler for the NPU (IRQ 56 on Corstone-300) calls this.
void handle_npu_irq();

// PMU cycles of every NPU run since the last reset_cycles() (0 when none ran).
uint64_t npu_cycles();
void reset_cycles();

// The backend table itself (tests register it with a model's platform via register_backend).
extern const rt::Backend kEthosUBackend;

// Forget the platform (tests; the runtime's registry is cleared with rt::clear_backends()).
void unregister_platform();
// The driver the backend runs (tests deliver the register model's interrupt to it).
Driver* backend_driver_for_tests();

}  // namespace ethosu
