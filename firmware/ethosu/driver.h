// A register-level Ethos-U55 / Ethos-U85 driver (written for this project, no Arm driver inside).
//
// Everything that touches the outside goes through `NpuPlatform`: register reads and writes
// (the board: volatile accesses at the NPU base; host tests: the register model), the wait for
// the NPU interrupt (bounded: the board's waits in WFI until the IRQ handler ran or its tick
// budget is spent; the model can time out), and D-cache maintenance (the board: Armv8-M SCB
// by address; QEMU and the host: nothing). Register names and bits: those of Vela's
// ethos_u55_regs (the installed ethos-u-vela wheel) and, for the U85, regor's
// ethos_u85_interface.hpp (Vela 5.1.0's sources); how they are used: docs/firmware.md.
//
// The two NPUs share the control registers (ID..PROT, CONFIG, REGIONCFG, BASEPn) and the
// invoke sequence; `NpuPlatform::kind` (the board's board.yaml npu.kind, through
// board_config.h) picks what differs (`NpuLayout`): the product in CONFIG, the CONFIG fields a
// command stream must match, the fault bits of STATUS, the AXI set-up (U55: AXI_LIMIT0-3;
// U85: MEM_ATTR0-3, AXI_SRAM, AXI_EXT) and where the PMU lives (0x180 / 0x1180).
//
// One invocation (Driver::invoke):
//   check the NPU is there and is what the command stream was compiled for (init),
//   soft reset (RESET, poll STATUS.reset_status, bounded), check PROT, the AXI set-up,
//   clean D-cache over the command stream and every region,
//   QBASE/QSIZE/QCONFIG, REGIONCFG, BASEPn, PMU cycle counter on,
//   CMD = (CMD & 0xC) | 1, wait for the IRQ (its handler reads STATUS and clears the IRQ with
//   CMD = (CMD & 0xC) | 2), faults by name (then a reset: fault bits clear only so),
//   success = cmd_end_reached, PMU cycles, invalidate D-cache over the regions.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/error.h"
#include "timing_adapters.h"

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
constexpr uint32_t AXI_LIMIT0 = 0x040;  // U55: ..3 at +4 each
constexpr uint32_t MEM_ATTR0 = 0x040;   // U85: ..3 at +4 each (where the U55 has AXI_LIMITn)
constexpr uint32_t AXI_SRAM = 0x050;    // U85: limits of each SRAM AXI port
constexpr uint32_t AXI_EXT = 0x054;     // U85: limits of each EXT AXI port
constexpr uint32_t BASEP0 = 0x080;      // region n: low word at 0x80 + 8n, high word +4
// The PMU: at 0x180 on the U55, 0x1180 on the U85 (NpuLayout::pmu); offsets inside it.
constexpr uint32_t PMU_U55 = 0x180;
constexpr uint32_t PMU_U85 = 0x1180;
constexpr uint32_t PMU_PMCR = 0x00;
constexpr uint32_t PMU_PMCNTENSET = 0x04;
constexpr uint32_t PMU_PMCCNTR_LO = 0x20;
constexpr uint32_t PMU_PMCCNTR_HI = 0x24;
// The U55's, by name.
constexpr uint32_t PMCR = PMU_U55 + PMU_PMCR;
constexpr uint32_t PMCNTENSET = PMU_U55 + PMU_PMCNTENSET;
constexpr uint32_t PMCCNTR_LO = PMU_U55 + PMU_PMCCNTR_LO;
constexpr uint32_t PMCCNTR_HI = PMU_U55 + PMU_PMCCNTR_HI;
}  // namespace reg

namespace status {
constexpr uint32_t kState = 1u << 0;  // 1 = running
constexpr uint32_t kIrqRaised = 1u << 1;
constexpr uint32_t kBusStatus = 1u << 2;
constexpr uint32_t kResetStatus = 1u << 3;
constexpr uint32_t kCmdParseError = 1u << 4;
constexpr uint32_t kCmdEndReached = 1u << 5;
constexpr uint32_t kPmuIrqRaised = 1u << 6;
constexpr uint32_t kWdFault = 1u << 7;      // U55 (reserved on the U85)
constexpr uint32_t kEccFault = 1u << 8;
constexpr uint32_t kBranchFault = 1u << 9;  // U85 (NPU_OP_BRANCH)
constexpr uint32_t kFaultsU55 = kBusStatus | kCmdParseError | kWdFault | kEccFault;
constexpr uint32_t kFaultsU85 = kBusStatus | kCmdParseError | kBranchFault | kEccFault;
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
inline uint32_t config_product(uint32_t config) { return config >> 28; }  // 0 = U55, 2 = U85
// U85 only: log2 of the SRAM and EXT AXI port counts, and the custom DMA.
inline uint32_t config_num_axi_sram_log2(uint32_t config) { return (config >> 8) & 0x3; }
inline uint32_t config_num_axi_ext_log2(uint32_t config) { return (config >> 10) & 0x1; }
inline uint32_t config_custom_dma(uint32_t config) { return (config >> 27) & 0x1; }

// Which Ethos-U the driver talks to (board.yaml npu.kind; the board's platform says).
enum class NpuKind : uint8_t { EthosU55, EthosU85 };

// What differs between the NPUs the driver knows.
struct NpuLayout {
  NpuKind kind;
  const char* name;    // "Ethos-U55": in every message
  uint32_t product;    // CONFIG.product
  uint32_t pmu;        // the PMU's offset (reg::PMU_U55 / reg::PMU_U85)
  uint32_t faults;     // the STATUS bits that are faults
};
const NpuLayout& layout_of(NpuKind kind);
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
  NpuKind kind;           // the register layout (NpuLayout)
  uint32_t qconfig;       // command stream: U55 AXI port and counter; U85 MEM_ATTR entry
  uint32_t regioncfg;     // 2 bits per region (REGIONCFG): as qconfig, per base pointer
  uint32_t axi_limit[4];  // U55: AXI_LIMIT0..3
  uint32_t mem_attr[4];   // U85: MEM_ATTR0..3 (bit 2: the EXT port, else the SRAM port)
  uint32_t axi_sram;      // U85: AXI_SRAM (outstanding reads-1 5:0, writes-1 12:8, beats 17:16)
  uint32_t axi_ext;       // U85: AXI_EXT (the same fields)
  // The board's AXI timing adapters, written with write32 before a delegate's job (count 0:
  // none; the backend then leaves the ports' speeds as they are).
  TimingAdapters timing_adapters;
};

constexpr uint32_t kDefaultTimeoutUs = 5000000;
constexpr uint32_t kDefaultResetPolls = 100000;
// Arm's defaults for Corstone-300 (ExecuTorch's Shared_Sram): the command stream on AXI1
// counter 2, weights (region 0) on AXI1 counter 3, scratch (region 1) on AXI0, the rest
// AXI0 counter 1; 64-byte bursts, 32 outstanding reads and 16 writes per counter.
constexpr uint32_t kDefaultQconfig = 2;
constexpr uint32_t kDefaultRegioncfg = 0x5553;
constexpr uint32_t kDefaultAxiLimit = (31u << 16) | (15u << 24);
// Arm's driver defaults for the U85 (ethos-u-core-driver ethosu_config_u85.h): MEM_ATTR0/1 on
// the SRAM port, 2/3 on the EXT port (non-shareable, device non-bufferable); QCONFIG 2 (the
// command stream over EXT) and REGIONCFG region 0 = 3 (weights over EXT), region 1 = 0
// (scratch over SRAM), the others 1: the same words as the U55's above. Per SRAM port 12
// outstanding reads and 16 writes, per EXT port 64 and 32; bursts split at 256 bytes.
constexpr uint32_t kDefaultMemAttr[4] = {0, 0, 1u << 2, 1u << 2};
constexpr uint32_t kDefaultAxiSram = (12u - 1) | ((16u - 1) << 8) | (2u << 16);
constexpr uint32_t kDefaultAxiExt = (64u - 1) | ((32u - 1) << 8) | (2u << 16);

// A platform with the defaults above for `kind` and the given base (the caller fills the
// hooks).
NpuPlatform default_platform(uintptr_t base, NpuKind kind = NpuKind::EthosU55);

// The regions and command stream of one run. Region n is BASEPn; unused regions are null.
struct Job {
  const uint8_t* command_stream;
  uint32_t command_stream_size;  // bytes
  void* regions[kMaxRegions];
  size_t region_sizes[kMaxRegions];
  size_t num_regions;
  // Bit r: region r is constant (the weights: the NPU only reads it, the CPU never writes it
  // once the program is loaded), so no job invalidates it. With `constants_clean` (the
  // backend wrote the command stream and the constant regions back when it loaded the
  // program), no job cleans them either: a board's driver does that work once, not per job.
  uint32_t constant_regions;
  bool constants_clean;
};

class Driver {
 public:
  Driver() = default;
  explicit Driver(const NpuPlatform& platform) : p_(platform) {}

  // ID and CONFIG both read non-zero (QEMU's placeholder reads 0). Needs read32.
  bool present() const;
  // ID and CONFIG; NoHardware "no Ethos-U55 at 0x... on this board" when they read 0, or
  // when CONFIG names another product than the platform's kind.
  rt::Error probe(uint32_t* id, uint32_t* config) const;
  // The hardware must be what OPTIMIZER_CONFIG says the stream was compiled for: product, MAC
  // count, command-stream version equal (U85: the AXI port counts too, and a custom DMA the
  // stream needs); architecture major equal and minor not older.
  rt::Error check_config(uint32_t compiled_config, uint32_t compiled_id) const;
  rt::Error soft_reset();
  // Run one job to completion (or to a named failure).
  rt::Error invoke(const Job& job);
  // The NPU interrupt's body: the board's IRQ handler calls it (host: the model's wait).
  void handle_irq();

  uint64_t last_cycles() const { return cycles_; }  // PMU cycle counter of the last invoke
  uint32_t last_status() const { return irq_status_; }
  const NpuPlatform& platform() const { return p_; }
  const NpuLayout& layout() const { return layout_of(p_.kind); }

 private:
  uint32_t read(uint32_t offset) const { return p_.read32(p_.ctx, offset); }
  void write(uint32_t offset, uint32_t value) { p_.write32(p_.ctx, offset, value); }
  uint64_t npu_address(const void* p) const;
  rt::Error check_faults(uint32_t status_word);
  void set_up_axi();

  NpuPlatform p_ = {};
  volatile bool irq_done_ = false;
  volatile uint32_t irq_status_ = 0;
  uint64_t cycles_ = 0;
};

// Names of the fault bits set in a STATUS value ("bus_status cmd_parse_error"), into `out`.
void fault_names(uint32_t status_word, char* out, size_t out_size);

// Armv8-M D-cache maintenance by address (SCB DCCMVAC / DCIMVAC, 32-byte lines: Cortex-M55
// and Cortex-M85), for the board's clean_dcache/invalidate_dcache hooks. Only the target
// build has them.
#if defined(__ARM_ARCH) && !defined(SDK_HOST)
void armv8m_clean_dcache(void* ctx, const void* addr, size_t size);
void armv8m_invalidate_dcache(void* ctx, void* addr, size_t size);
#endif

}  // namespace ethosu
