// executor_runner on a board: the program and inputs come from the slots the
// host preloaded (board.yaml `slots`), or the program is linked in (embed=1).
#include <stdint.h>

#include "board_config.h"
#include "platform.h"
#include "record.h"
#include "runner.h"

#ifdef SDK_EMBEDDED_PROGRAM
extern "C" const uint8_t sdk_embedded_program[];
extern "C" const uint32_t sdk_embedded_program_size;
#endif

namespace {

// Method metadata: small and hot, so it stays in the board's fast RAM (.bss).
alignas(16) uint8_t g_metadata[SDK_METADATA_BYTES];

const uint8_t* slot(uintptr_t address) { return reinterpret_cast<const uint8_t*>(address); }
uint8_t* writable_slot(uintptr_t address) { return reinterpret_cast<uint8_t*>(address); }

// Register 0 of the NPU (ID). A board without the NPU (QEMU) reads 0 there.
void log_npu() {
  uint32_t id = *reinterpret_cast<volatile const uint32_t*>(SDK_NPU_BASE);
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

}  // namespace

int main() {
  platform_init();
  runner::begin(SDK_BOARD_NAME);
  log_npu();
  run_test_hook();

  rt::ConstBytes program;
#ifdef SDK_EMBEDDED_PROGRAM
  program = rt::ConstBytes{sdk_embedded_program, sdk_embedded_program_size};
#else
  rt::Error err = runner::open_blob(slot(SDK_PROGRAM_SLOT_ADDR), SDK_PROGRAM_SLOT_SIZE,
                                    runner::kProgramMagic, rt::Error::InvalidProgram, &program);
  if (err != rt::Error::Ok) {
    return runner::report_error(err);
  }
#endif
  rt::ConstBytes inputs;
  rt::Error inputs_err = runner::open_blob(slot(SDK_INPUTS_SLOT_ADDR), SDK_INPUTS_SLOT_SIZE,
                                           runner::kInputsMagic, rt::Error::InvalidInputs, &inputs);
  if (inputs_err != rt::Error::Ok) {
    return runner::report_error(inputs_err);
  }
  runner::RunnerMemory memory = {
      {g_metadata, sizeof(g_metadata)},
      {writable_slot(SDK_PLANNED_SLOT_ADDR), SDK_PLANNED_SLOT_SIZE},
      {writable_slot(SDK_SCRATCH_SLOT_ADDR), SDK_SCRATCH_SLOT_SIZE},
  };
  return runner::run(program, inputs, memory);
}
