// The rt::Backend "EthosUBackend": ExecuTorch Ethos-U delegates run on the Ethos-U55.
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
// Virtual mode (docs/link.md "Virtual NPU"): when the NPU is absent (ID or CONFIG reads 0) and
// a VirtualNpu provider is installed and available at init, the delegate records virtual mode
// instead of failing with NoHardware (the hardware config check is skipped: there is none) and
// hashes its payload once. prepare checks the same; execute lays out the scratch as for the
// NPU, hands the job to the provider (the host link) and copies the outputs out.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "rt/backend.h"
#include "vela_payload.h"

namespace ethosu {

constexpr const char* kBackendId = "EthosUBackend";
constexpr size_t kPayloadHashBytes = 32;  // SHA-256

// What a virtual NPU is given for one run of a delegate.
struct VirtualJob {
  uint32_t delegate_index;        // in the program's delegate list
  const uint8_t* payload_sha256;  // kPayloadHashBytes: how the host finds the delegate
  const VelaPayload* payload;
};

// Runs a delegate's command stream somewhere else (the host link's server: the host does it).
class VirtualNpu {
 public:
  // Whether jobs can be taken at all (asked at init, when the NPU is absent).
  virtual bool available() = 0;
  // The scratch holds the inputs at their record offsets; on success it holds the outputs at
  // theirs. Only [scratch, scratch + scratch_size) (the NPU's region 1) may be touched.
  virtual rt::Error run(const VirtualJob& job, uint8_t* scratch, size_t scratch_size) = 0;

 protected:
  ~VirtualNpu() = default;
};

struct BackendState {
  VelaPayload payload;
  uint64_t last_cycles;   // NPU PMU cycles of the last execute (0 in virtual mode)
  uint64_t total_cycles;  // since init
  uint32_t executions;
  uint32_t delegate_index;
  bool virtual_npu;       // no NPU: jobs go to the installed VirtualNpu
  uint8_t payload_sha256[kPayloadHashBytes];  // virtual mode only
};

// Keep `platform` (copied), set up the driver over it and add the backend to the runtime's
// registry. Call once, before loading a program; fails when the registry refuses it.
rt::Error register_backend(const NpuPlatform& platform);

// The provider delegates use when the NPU is absent (nullptr: none; then NoHardware at load).
// Kept by pointer: it must outlive every method loaded while it was installed.
void set_virtual_npu(VirtualNpu* provider);
VirtualNpu* virtual_npu();

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
