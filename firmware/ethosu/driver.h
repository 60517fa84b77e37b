// A register-level Ethos-U55 driver (written for this project, no Arm driver inside).
//
// Everything that touches the outside goes through `NpuPlatform`: register reads and writes
// (the board: volatile accesses at the NPU base; host tests: the register model), the wait for
// the NPU interrupt (bounded: the board's waits in WFI until the IRQ handler ran or its tick
// budget is spent; the model can time out), and D-cache maintenance (the board: Cortex-M55 SCB
// by address; QEMU and the host: nothing). Register names and bits: those of Vela's
// ethos_u55_regs (the installed ethos-u-vela wheel); how they are used: docs/firmware.md.
//
// One invocation (Driver::invoke):
//   check the NPU is there and is what the command stream was compiled for (init),
//   soft reset (RESET, poll STATUS.reset_status, bounded), check PROT, AXI limits,
//   clean D-cache over the command stream and every region,
//   QBASE/QSIZE/QCONFIG, REGIONCFG, BASEPn, PMU cycle counter on,
//   CMD = (CMD & 0xC) | 1, wait for the IRQ (its handler reads STATUS and clears the IRQ with
//   CMD = (CMD & 0xC) | 2), faults by name (then a reset: fault bits clear only so),
//   success = cmd_end_reached, PMU cycles, invalidate D-cache over the regions.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/error.h"

namespace ethosu {

// Register offsets from the NPU base.
namespace reg {
constexpr uint32_t ID = 0x000;
constexpr uint32_t STATUS = 0x004;
constexpr uint32_t CMD = 0x008;
constexpr uint32_t RESET = 0x00C;
constexpr uint32_t QBASE0 = 0x010;  // low word
constexpr uint32_t QBASE1 = 0x014;  // high word
constexpr uint32_t QREAD = 0x018;
constexpr uint32_t QCONFIG = 0x01C;
constexpr uint32_t QSIZE = 0x020;
constexpr uint32_t PROT = 0x024;
constexpr uint32_t CONFIG = 0x028;
constexpr uint32_t REGIONCFG = 0x03C;
constexpr uint32_t AXI_LIMIT0 = 0x040;  // ..3 at +4 each
constexpr uint32_t BASEP0 = 0x080;      // region n: low word at 0x80 + 8n, high word +4
constexpr uint32_t PMCR = 0x180;
constexpr uint32_t PMCNTENSET = 0x184;
constexpr uint32_t PMCCNTR_LO = 0x1A0;
constexpr uint32_t PMCCNTR_HI = 0x1A4;
}  // namespace reg

namespace status {
constexpr uint32_t kState = 1u << 0;  // 1 = running
constexpr uint32_t kIrqRaised = 1u << 1;
constexpr uint32_t kBusStatus = 1u << 2;
constexpr uint32_t kResetStatus = 1u << 3;
constexpr uint32_t kCmdParseError = 1u << 4;
constexpr uint32_t kCmdEndReached = 1u << 5;
constexpr uint32_t kPmuIrqRaised = 1u << 6;
constexpr uint32_t kWdFault = 1u << 7;
constexpr uint32_t kEccFault = 1u << 8;
constexpr uint32_t kFaults = kBusStatus | kCmdParseError | kWdFault | kEccFault;
}  // namespace status

namespace cmd {
constexpr uint32_t kRun = 1u << 0;       // transition_to_running_state
constexpr uint32_t kClearIrq = 1u << 1;  // clear_irq
constexpr uint32_t kKeepQ = 0xCu;        // clock_q_enable | power_q_enable: kept on every write
}  // namespace cmd

constexpr size_t kMaxRegions = 8;

// CONFIG and ID fields (the hardware's and the ones a command stream was compiled for).
inline uint32_t config_macs_log2(uint32_t config) { return config & 0xF; }
inline uint32_t config_cmd_stream_version(uint32_t config) { return (config >> 4) & 0xF; }
inline uint32_t config_product(uint32_t config) { return config >> 28; }  // 0 = U55
inline uint32_t id_arch_major(uint32_t id) { return id >> 28; }
inline uint32_t id_arch_minor(uint32_t id) { return (id >> 20) & 0xFF; }
inline uint32_t id_arch_patch(uint32_t id) { return (id >> 16) & 0xF; }

// What a board (or a test) gives the driver. All hooks except the cache ones are required.
struct NpuPlatform {
  uintptr_t base;  // register base: in messages, and what the board's read32/write32 use
  uint32_t (*read32)(void* ctx, uint32_t offset);
  void (*write32)(void* ctx, uint32_t offset, uint32_t value);
  // Return once Driver::handle_irq() has run (true) or after about `timeout_us` (false).
  // Never an endless wait: the board counts ticks, the host model decides.
  bool (*wait_for_irq)(void* ctx, const volatile bool* irq_done, uint32_t timeout_us);
  // D-cache by address range (nullptr: no cache, as on QEMU and the host).
  void (*clean_dcache)(void* ctx, const void* addr, size_t size);
  void (*invalidate_dcache)(void* ctx, void* addr, size_t size);
  void* ctx;
  // The address the NPU sees for a CPU pointer (nullptr: the same address).
  uint64_t (*npu_address)(void* ctx, const void* cpu_address);
  uint32_t timeout_us;    // one inference; 0 picks kDefaultTimeoutUs
  uint32_t reset_polls;   // STATUS reads while a reset completes; 0 picks kDefaultResetPolls
  bool secure;            // RESET pending_CSL: the NPU's security level after reset
  bool privileged;        // RESET pending_CPL
  uint32_t qconfig;       // command-stream AXI port (QCONFIG)
  uint32_t regioncfg;     // 2 bits per region (REGIONCFG)
  uint32_t axi_limit[4];  // AXI_LIMIT0..3
};

constexpr uint32_t kDefaultTimeoutUs = 5000000;
constexpr uint32_t kDefaultResetPolls = 100000;
// Arm's defaults for Corstone-300 (ExecuTorch's Shared_Sram): the command stream on AXI1
// counter 2, weights (region 0) on AXI1 counter 3, scratch (region 1) on AXI0, the rest
// AXI0 counter 1; 64-byte bursts, 32 outstanding reads and 16 writes per counter.
constexpr uint32_t kDefaultQconfig = 2;
constexpr uint32_t kDefaultRegioncfg = 0x5553;
constexpr uint32_t kDefaultAxiLimit = (31u << 16) | (15u << 24);

// A platform with the defaults above and the given hooks (the caller fills the rest).
NpuPlatform default_platform(uintptr_t base);

// The regions and command stream of one run. Region n is BASEPn; unused regions are null.
struct Job {
  const uint8_t* command_stream;
  uint32_t command_stream_size;  // bytes
  void* regions[kMaxRegions];
  size_t region_sizes[kMaxRegions];
  size_t num_regions;
};

class Driver {
 public:
  Driver() = default;
  explicit Driver(const NpuPlatform& platform) : p_(platform) {}

  // ID and CONFIG both read non-zero (QEMU's placeholder reads 0). Needs read32.
  bool present() const;
  // ID and CONFIG; NoHardware "no Ethos-U55 at 0x... on this board" when they read 0.
  rt::Error probe(uint32_t* id, uint32_t* config) const;
  // The hardware must be what OPTIMIZER_CONFIG says the stream was compiled for: product, MAC
  // count, command-stream version equal; architecture major equal and minor not older.
  rt::Error check_config(uint32_t compiled_config, uint32_t compiled_id) const;
  rt::Error soft_reset();
  // Run one job to completion (or to a named failure).
  rt::Error invoke(const Job& job);
  // The NPU interrupt's body: the board's IRQ handler calls it (host: the model's wait).
  void handle_irq();

  uint64_t last_cycles() const { return cycles_; }  // PMU cycle counter of the last invoke
  uint32_t last_status() const { return irq_status_; }
  const NpuPlatform& platform() const { return p_; }

 private:
  uint32_t read(uint32_t offset) const { return p_.read32(p_.ctx, offset); }
  void write(uint32_t offset, uint32_t value) { p_.write32(p_.ctx, offset, value); }
  uint64_t npu_address(const void* p) const;
  rt::Error check_faults(uint32_t status_word);

  NpuPlatform p_ = {};
  volatile bool irq_done_ = false;
  volatile uint32_t irq_status_ = 0;
  uint64_t cycles_ = 0;
};

// Names of the fault bits set in a STATUS value ("bus_status cmd_parse_error"), into `out`.
void fault_names(uint32_t status_word, char* out, size_t out_size);

// Cortex-M55 D-cache maintenance by address (SCB DCCMVAC / DCIMVAC, 32-byte lines), for the
// board's clean_dcache/invalidate_dcache hooks. Only the target build has them.
#if defined(__ARM_ARCH) && !defined(SDK_HOST)
void cm55_clean_dcache(void* ctx, const void* addr, size_t size);
void cm55_invalidate_dcache(void* ctx, void* addr, size_t size);
#endif

}  // namespace ethosu
