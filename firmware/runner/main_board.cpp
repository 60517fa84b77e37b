// executor_runner on a board: the host link (docs/link.md). HELLO, then serve requests on the
// console UART for ever; a program comes over the link, from the program slot (preloaded,
// LOAD_SLOT) or linked in (embed=1). The Ethos-U backend is registered on the board's NPU
// platform; without an NPU (QEMU) on the link's virtual U55 instead: the same driver, its
// register accesses answered by the host's model of the U55 (docs/link.md "Virtual U55").
#include <stdint.h>

#include "backend.h"
#include "board_config.h"
#include "board_npu.h"
#include "npu_fault.h"
#include "platform.h"
#include "console.h"
#include "server.h"

#ifdef SDK_EMBEDDED_PROGRAM
extern "C" const uint8_t sdk_embedded_program[];
extern "C" const uint32_t sdk_embedded_program_size;
#endif

namespace {

// Method metadata: small and hot, so it stays in the board's fast RAM (.bss).
alignas(16) uint8_t g_metadata[SDK_METADATA_BYTES];

uint8_t* writable_slot(uintptr_t address) { return reinterpret_cast<uint8_t*>(address); }

// NPU registers: ID (0x00) and CONFIG (0x28). A board without the NPU (QEMU) reads 0 there.
constexpr uintptr_t kNpuConfigOffset = 0x28;

uint32_t npu_register(uintptr_t offset) {
  return *reinterpret_cast<volatile const uint32_t*>(SDK_NPU_BASE + offset);
}

void log_npu() {
  uint32_t id = npu_register(0);
  runner::Line line;
  line.text("executor_runner: npu ").text(SDK_NPU_CONFIG).text(" at 0x").hex32(SDK_NPU_BASE);
  if (id == 0) {
    line.text(": absent (ID reads 0)").end();
  } else {
    line.text(": id=0x").hex32(id).end();
  }
}

#if defined(SDK_TEST_HOOK_STACK)
// Recurses until the stack limit stops it: the endless recursion is the point.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"
__attribute__((noinline)) uint32_t recurse(volatile uint32_t depth) {
  volatile uint32_t frame[64];
  frame[depth % 64] = depth;
  return recurse(depth + 1) + frame[depth % 64];
}
#pragma GCC diagnostic pop
#endif

// Test variants (scons test_hook=...): prove that the host notices a hang or a fault.
void run_test_hook() {
#if defined(SDK_TEST_HOOK_HANG)
  runner::log("test hook: hanging on purpose");
  for (;;) {
    __asm volatile("nop");
  }
#elif defined(SDK_TEST_HOOK_FAULT)
  runner::log("test hook: executing an undefined instruction on purpose");
  __asm volatile("udf #0");
#elif defined(SDK_TEST_HOOK_STACK)
  runner::log("test hook: overflowing the stack on purpose");
  recurse(0);
#endif
}

// Test variants (scons test_hook=npu_<fault>): the NPU platform with one bug built in, to prove
// that a run on it fails or gives a wrong result (ethosu/npu_fault.h).
ethosu::NpuPlatform with_test_fault(const ethosu::NpuPlatform& platform) {
#if defined(SDK_TEST_HOOK_NPU_WRONG_BASE)
  return ethosu::faulty_platform(platform, ethosu::NpuFault::WrongBase);
#elif defined(SDK_TEST_HOOK_NPU_WRONG_WEIGHTS)
  return ethosu::faulty_platform(platform, ethosu::NpuFault::WrongWeights);
#elif defined(SDK_TEST_HOOK_NPU_WRONG_REGION)
  return ethosu::faulty_platform(platform, ethosu::NpuFault::WrongRegion);
#elif defined(SDK_TEST_HOOK_NPU_WRONG_QSIZE)
  return ethosu::faulty_platform(platform, ethosu::NpuFault::WrongQsize);
#elif defined(SDK_TEST_HOOK_NPU_NO_START)
  return ethosu::faulty_platform(platform, ethosu::NpuFault::NoStart);
#else
  return platform;
#endif
}

rt::ConstBytes embedded_program() {
#ifdef SDK_EMBEDDED_PROGRAM
  return rt::ConstBytes{sdk_embedded_program, sdk_embedded_program_size};
#else
  return rt::ConstBytes{nullptr, 0};
#endif
}

runner::RunnerMemory runner_memory() {
  return runner::RunnerMemory{
      {g_metadata, sizeof(g_metadata)},
      {writable_slot(SDK_PLANNED_SLOT_ADDR), SDK_PLANNED_SLOT_SIZE},
      {writable_slot(SDK_SCRATCH_SLOT_ADDR), SDK_SCRATCH_SLOT_SIZE},
#ifdef SDK_NPU_ARENA_SLOT_ADDR
      {writable_slot(SDK_NPU_ARENA_SLOT_ADDR), SDK_NPU_ARENA_SLOT_SIZE},
#endif
  };
}

bool npu_present() { return npu_register(0) != 0 && npu_register(kNpuConfigOffset) != 0; }

// Before anything loads: a delegated program needs the backend (the runtime resolves delegates
// first, so without it every such program would be BackendMissing).
rt::Error register_npu(const ethosu::NpuPlatform& platform) {
  rt::Error err = ethosu::register_backend(with_test_fault(platform));
  if (err != rt::Error::Ok) {
    rt::add_context("registering the Ethos-U backend");
  }
  return err;
}

// The host link (docs/link.md). Its frame buffers and state are static, like everything else.
hostlink::PlatformTransport g_transport;

[[noreturn]] void serve_link() {
  runner::log("serving the host link on the console");
  log_npu();
  run_test_hook();
  static const hostlink::ServerConfig config = {
      runner_memory(),
      {writable_slot(SDK_PROGRAM_SLOT_ADDR), SDK_PROGRAM_SLOT_SIZE},
      {writable_slot(SDK_INPUTS_SLOT_ADDR), SDK_INPUTS_SLOT_SIZE},  // the inputs kept between runs
      embedded_program(),
      SDK_FIRMWARE_VERSION,
      SDK_BOARD_NAME,
      SDK_NPU_CONFIG,
      npu_register(0),
      npu_register(kNpuConfigOffset),
  };
  static hostlink::Server server(g_transport, config);
  ethosu::NpuPlatform npu = board_npu_platform();
  rt::Error err = register_npu(npu_present() ? npu
                                             : server.virtual_u55_platform(npu, board_npu_pend_irq));
  if (err != rt::Error::Ok) {
    // The link still serves CPU programs; a delegated one then fails to load with the runtime's
    // BackendMissing.
    runner::Line line;
    line.text("executor_runner: ").text(rt::error_name(err)).text(": ");
    line.text(rt::last_error_reason()).end();
  }
  server.boot();
  for (;;) {
    server.serve();  // returns only when the transport has closed, which a UART never does
  }
}

}  // namespace

int main() {
  platform_init();
  serve_link();
}
