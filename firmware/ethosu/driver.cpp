// The Ethos-U55 / Ethos-U85 driver (see driver.h for the sequence and the hooks).
#include "driver.h"

#include <stdio.h>
#include <string.h>

namespace ethosu {
namespace {

using rt::Error;
using rt::ul;

constexpr uint32_t kAlign = 16;  // the NPU's command queue and base pointers

struct FaultBit {
  uint32_t bit;
  const char* name;
};
const FaultBit kFaultBits[] = {
    {status::kBusStatus, "bus_status"},
    {status::kCmdParseError, "cmd_parse_error"},
    {status::kWdFault, "wd_fault"},
    {status::kEccFault, "ecc_fault"},
    {status::kBranchFault, "branch_fault"},
};

const NpuLayout kLayouts[] = {
    {NpuKind::EthosU55, "Ethos-U55", 0, reg::PMU_U55, status::kFaultsU55},
    {NpuKind::EthosU85, "Ethos-U85", 2, reg::PMU_U85, status::kFaultsU85},
};

unsigned long lo32(uint64_t v) { return static_cast<unsigned long>(v & 0xFFFFFFFFu); }

// Region r is memory whose cache lines a job maintains: present, and not the same buffer as an
// earlier region (Vela's fast scratch is the arena itself here).
bool needs_maintenance(const Job& job, size_t r) {
  if (job.regions[r] == nullptr || job.region_sizes[r] == 0) {
    return false;
  }
  const uint32_t constant = (job.constant_regions >> r) & 1u;
  for (size_t earlier = 0; earlier < r; ++earlier) {
    if (job.regions[earlier] == job.regions[r] &&
        job.region_sizes[earlier] >= job.region_sizes[r] &&
        ((job.constant_regions >> earlier) & 1u) == constant) {
      return false;  // maintained as that one is
    }
  }
  return true;
}

}  // namespace

const NpuLayout& layout_of(NpuKind kind) {
  return kind == NpuKind::EthosU85 ? kLayouts[1] : kLayouts[0];
}

NpuPlatform default_platform(uintptr_t base, NpuKind kind) {
  NpuPlatform p = {};
  p.base = base;
  p.kind = kind;
  p.timeout_us = kDefaultTimeoutUs;
  p.reset_polls = kDefaultResetPolls;
  p.secure = true;  // Corstone-300 and -320 boot Secure, privileged
  p.privileged = true;
  p.qconfig = kDefaultQconfig;
  p.regioncfg = kDefaultRegioncfg;
  for (uint32_t& limit : p.axi_limit) {
    limit = kDefaultAxiLimit;
  }
  for (size_t i = 0; i < 4; ++i) {
    p.mem_attr[i] = kDefaultMemAttr[i];
  }
  p.axi_sram = kDefaultAxiSram;
  p.axi_ext = kDefaultAxiExt;
  return p;
}

void fault_names(uint32_t status_word, char* out, size_t out_size) {
  size_t used = 0;
  out[0] = '\0';
  for (const FaultBit& f : kFaultBits) {
    if ((status_word & f.bit) != 0 && used < out_size) {
      int n = snprintf(out + used, out_size - used, "%s%s", used == 0 ? "" : " ", f.name);
      used += n > 0 ? static_cast<size_t>(n) : 0;
    }
  }
}

bool Driver::present() const {
  return p_.read32 != nullptr && read(reg::ID) != 0 && read(reg::CONFIG) != 0;
}

Error Driver::probe(uint32_t* id, uint32_t* config) const {
  const char* name = layout().name;
  RT_CHECK(p_.read32 != nullptr && p_.write32 != nullptr && p_.wait_for_irq != nullptr,
           Error::Internal, "%s driver: platform hooks missing", name);
  *id = read(reg::ID);
  *config = read(reg::CONFIG);
  // QEMU's placeholder at the NPU's address reads 0 and ignores writes.
  RT_CHECK(*id != 0 && *config != 0, Error::NoHardware,
           "no %s at 0x%08lx on this board (ID 0x%08lx, CONFIG 0x%08lx)", name, ul(p_.base),
           ul(*id), ul(*config));
  RT_CHECK(config_product(*config) == layout().product, Error::NoHardware,
           "the NPU at 0x%08lx is not an %s (CONFIG 0x%08lx: product %lu, not %lu)", ul(p_.base),
           name, ul(*config), ul(config_product(*config)), ul(layout().product));
  return Error::Ok;
}

Error Driver::check_config(uint32_t compiled_config, uint32_t compiled_id) const {
  uint32_t id = 0;
  uint32_t config = 0;
  RT_TRY(probe(&id, &config));
  RT_CHECK(config_product(compiled_config) == config_product(config), Error::NotSupported,
           "the command stream is for NPU product %lu (CONFIG 0x%08lx), the NPU is product %lu "
           "(CONFIG 0x%08lx)",
           ul(config_product(compiled_config)), ul(compiled_config), ul(config_product(config)),
           ul(config));
  RT_CHECK(config_macs_log2(compiled_config) == config_macs_log2(config), Error::NotSupported,
           "the command stream is for %lu MACs per cycle (CONFIG 0x%08lx), the NPU has %lu "
           "(CONFIG 0x%08lx)",
           ul(1ul << config_macs_log2(compiled_config)), ul(compiled_config),
           ul(1ul << config_macs_log2(config)), ul(config));
  RT_CHECK(config_cmd_stream_version(compiled_config) == config_cmd_stream_version(config),
           Error::NotSupported,
           "the command stream has version %lu (CONFIG 0x%08lx), the NPU runs version %lu "
           "(CONFIG 0x%08lx)",
           ul(config_cmd_stream_version(compiled_config)), ul(compiled_config),
           ul(config_cmd_stream_version(config)), ul(config));
  if (p_.kind == NpuKind::EthosU85) {
    // Vela splits the traffic over the ports it was told the NPU has.
    bool ports_ok = config_num_axi_sram_log2(compiled_config) == config_num_axi_sram_log2(config) &&
                    config_num_axi_ext_log2(compiled_config) == config_num_axi_ext_log2(config);
    RT_CHECK(ports_ok, Error::NotSupported,
             "the command stream is for %lu SRAM and %lu EXT AXI ports (CONFIG 0x%08lx), the NPU "
             "has %lu and %lu (CONFIG 0x%08lx)",
             ul(1ul << config_num_axi_sram_log2(compiled_config)),
             ul(1ul << config_num_axi_ext_log2(compiled_config)), ul(compiled_config),
             ul(1ul << config_num_axi_sram_log2(config)), ul(1ul << config_num_axi_ext_log2(config)),
             ul(config));
    RT_CHECK(config_custom_dma(compiled_config) == 0 || config_custom_dma(config) != 0,
             Error::NotSupported,
             "the command stream needs the custom DMA (CONFIG 0x%08lx), the NPU has none "
             "(CONFIG 0x%08lx)",
             ul(compiled_config), ul(config));
  }
  bool arch_ok = id_arch_major(compiled_id) == id_arch_major(id) &&
                 id_arch_minor(compiled_id) <= id_arch_minor(id);
  RT_CHECK(arch_ok, Error::NotSupported,
           "the command stream is for NPU architecture %lu.%lu.%lu (ID 0x%08lx), the NPU is "
           "%lu.%lu.%lu (ID 0x%08lx)",
           ul(id_arch_major(compiled_id)), ul(id_arch_minor(compiled_id)),
           ul(id_arch_patch(compiled_id)), ul(compiled_id), ul(id_arch_major(id)),
           ul(id_arch_minor(id)), ul(id_arch_patch(id)), ul(id));
  return Error::Ok;
}

Error Driver::soft_reset() {
  uint32_t level = (p_.privileged ? 1u : 0u) | (p_.secure ? 2u : 0u);  // pending_CPL, _CSL
  write(reg::RESET, level);
  uint32_t polls = p_.reset_polls == 0 ? kDefaultResetPolls : p_.reset_polls;
  uint32_t s = read(reg::STATUS);
  for (uint32_t i = 1; i < polls && (s & status::kResetStatus) != 0; ++i) {
    s = read(reg::STATUS);
  }
  RT_CHECK((s & status::kResetStatus) == 0, Error::DelegateFailed,
           "%s soft reset did not complete after %lu STATUS reads (STATUS 0x%08lx)",
           layout().name, ul(polls), ul(s));
  uint32_t prot = read(reg::PROT);  // active_CPL bit 0, active_CSL bit 1
  RT_CHECK((prot & 3u) == level, Error::DelegateFailed,
           "%s did not take the privilege/security level 0x%lx after reset (PROT 0x%08lx)",
           layout().name, ul(level), ul(prot));
  return Error::Ok;
}

// The AXI set-up a reset clears: per kind.
void Driver::set_up_axi() {
  if (p_.kind == NpuKind::EthosU85) {
    for (uint32_t i = 0; i < 4; ++i) {
      write(reg::MEM_ATTR0 + 4 * i, p_.mem_attr[i]);
    }
    write(reg::AXI_SRAM, p_.axi_sram);
    write(reg::AXI_EXT, p_.axi_ext);
    return;
  }
  for (uint32_t i = 0; i < 4; ++i) {
    write(reg::AXI_LIMIT0 + 4 * i, p_.axi_limit[i]);
  }
}

uint64_t Driver::npu_address(const void* p) const {
  return p_.npu_address != nullptr ? p_.npu_address(p_.ctx, p)
                                   : static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

Error Driver::check_faults(uint32_t s) {
  if ((s & layout().faults) != 0) {
    char names[64];
    fault_names(s & layout().faults, names, sizeof(names));
    (void)soft_reset();  // fault bits clear only by reset; the fault is the news
    return rt::fail(Error::DelegateFailed, "%s fault: %s (STATUS 0x%08lx)", layout().name, names,
                    ul(s));
  }
  RT_CHECK((s & status::kCmdEndReached) != 0, Error::DelegateFailed,
           "%s interrupt without cmd_end_reached (STATUS 0x%08lx)", layout().name, ul(s));
  return Error::Ok;
}

Error Driver::invoke(const Job& job) {
  RT_CHECK(job.command_stream != nullptr && job.command_stream_size > 0 &&
               job.command_stream_size % 4 == 0 && job.num_regions <= kMaxRegions,
           Error::InvalidArgument, "%s job: no command stream or too many regions",
           layout().name);
  uint64_t qbase = npu_address(job.command_stream);
  RT_CHECK(qbase % kAlign == 0, Error::InvalidArgument,
           "%s job: command stream at 0x%08lx is not 16-byte aligned", layout().name,
           lo32(qbase));
  uint64_t basep[kMaxRegions] = {};
  for (size_t r = 0; r < job.num_regions; ++r) {
    if (job.regions[r] == nullptr) {
      continue;
    }
    basep[r] = npu_address(job.regions[r]);
    RT_CHECK(basep[r] % kAlign == 0, Error::InvalidArgument,
             "%s job: region %lu at 0x%08lx is not 16-byte aligned", layout().name, ul(r),
             lo32(basep[r]));
  }
  uint32_t id = 0;
  uint32_t config = 0;
  RT_TRY(probe(&id, &config));
  RT_TRY(soft_reset());
  set_up_axi();
  // The NPU reads memory behind the CPU's cache: write back what it will read (once per
  // buffer: regions 1 and 2 are often one scratch; constants once per program, at its load).
  if (p_.clean_dcache != nullptr) {
    if (!job.constants_clean) {
      p_.clean_dcache(p_.ctx, job.command_stream, job.command_stream_size);
    }
    for (size_t r = 0; r < job.num_regions; ++r) {
      bool constant = (job.constant_regions >> r) & 1u;
      if (needs_maintenance(job, r) && !(constant && job.constants_clean)) {
        p_.clean_dcache(p_.ctx, job.regions[r], job.region_sizes[r]);
      }
    }
  }
  write(reg::QBASE0, static_cast<uint32_t>(qbase));
  write(reg::QBASE1, static_cast<uint32_t>(qbase >> 32));
  write(reg::QSIZE, job.command_stream_size);
  write(reg::QCONFIG, p_.qconfig);
  write(reg::REGIONCFG, p_.regioncfg);
  for (size_t r = 0; r < job.num_regions; ++r) {
    write(reg::BASEP0 + 8 * static_cast<uint32_t>(r), static_cast<uint32_t>(basep[r]));
    write(reg::BASEP0 + 8 * static_cast<uint32_t>(r) + 4, static_cast<uint32_t>(basep[r] >> 32));
  }
  const uint32_t pmu = layout().pmu;
  write(pmu + reg::PMU_PMCR, 0x5);                // cnt_en | cycle_cnt_rst
  write(pmu + reg::PMU_PMCNTENSET, 0x80000000u);  // the cycle counter
  irq_done_ = false;
  irq_status_ = 0;
  cycles_ = 0;
  write(reg::CMD, (read(reg::CMD) & cmd::kKeepQ) | cmd::kRun);

  uint32_t timeout = p_.timeout_us == 0 ? kDefaultTimeoutUs : p_.timeout_us;
  bool done = p_.wait_for_irq(p_.ctx, &irq_done_, timeout);
  if (!done || !irq_done_) {
    uint32_t s = read(reg::STATUS);
    uint32_t qread = read(reg::QREAD);
    (void)soft_reset();  // stop the NPU before its regions are reused
    return rt::fail(Error::DelegateFailed,
                    "%s did not finish within %lu us (STATUS 0x%08lx, QREAD %lu of %lu bytes)",
                    layout().name, ul(timeout), ul(s), ul(qread), ul(job.command_stream_size));
  }
  RT_TRY(check_faults(irq_status_));
  cycles_ = (static_cast<uint64_t>(read(pmu + reg::PMU_PMCCNTR_HI) & 0xFFFF) << 32) |
            read(pmu + reg::PMU_PMCCNTR_LO);
  // What the NPU wrote is in memory, not in the cache: drop the stale lines (of the regions
  // it may write: never a constant one).
  if (p_.invalidate_dcache != nullptr) {
    for (size_t r = 0; r < job.num_regions; ++r) {
      if (needs_maintenance(job, r) && !((job.constant_regions >> r) & 1u)) {
        p_.invalidate_dcache(p_.ctx, job.regions[r], job.region_sizes[r]);
      }
    }
  }
  return Error::Ok;
}

void Driver::handle_irq() {
  irq_status_ = read(reg::STATUS);
  write(reg::CMD, (read(reg::CMD) & cmd::kKeepQ) | cmd::kClearIrq);
  irq_done_ = true;
}

#if defined(__ARM_ARCH) && !defined(SDK_HOST)
namespace {
constexpr uint32_t kLine = 32;  // Cortex-M55 and Cortex-M85 D-cache line
volatile uint32_t* const kDcimvac = reinterpret_cast<volatile uint32_t*>(0xE000EF5Cu);
volatile uint32_t* const kDccmvac = reinterpret_cast<volatile uint32_t*>(0xE000EF68u);
volatile uint32_t* const kDccimvac = reinterpret_cast<volatile uint32_t*>(0xE000EF70u);
}  // namespace

void armv8m_clean_dcache(void*, const void* addr, size_t size) {
  uintptr_t a = reinterpret_cast<uintptr_t>(addr) & ~uintptr_t{kLine - 1};
  uintptr_t end = reinterpret_cast<uintptr_t>(addr) + size;
  __asm__ volatile("dsb" ::: "memory");
  for (; a < end; a += kLine) {
    *kDccmvac = static_cast<uint32_t>(a);
  }
  __asm__ volatile("dsb\n\tisb" ::: "memory");
}

void armv8m_invalidate_dcache(void*, void* addr, size_t size) {
  uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  uintptr_t end = start + size;
  __asm__ volatile("dsb" ::: "memory");
  for (uintptr_t a = start & ~uintptr_t{kLine - 1}; a < end; a += kLine) {
    // A line shared with other data at either end is cleaned too, never just dropped.
    bool partial = a < start || a + kLine > end;
    *(partial ? kDccimvac : kDcimvac) = static_cast<uint32_t>(a);
  }
  __asm__ volatile("dsb\n\tisb" ::: "memory");
}
#endif

}  // namespace ethosu
