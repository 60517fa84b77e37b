// Board-internal hooks between startup.cpp, board.cpp and npu.cpp (not part of platform.h).
// boards/common/: the code every board here shares (Arm's Corstone subsystems: an Armv8-M CPU,
// a CMSDK UART, an Ethos-U); each board's own folder holds its board.yaml and linker.ld.
#pragma once

#include <stdint.h>

extern "C" {

// Print the `@sdk fault` record for a CPU fault.
void board_report_fault(uint32_t cfsr, uint32_t hfsr, uint32_t mmfar, uint32_t bfar, uint32_t pc,
                        uint32_t lr, uint32_t psr);

// Print a fault record for an interrupt nobody handles (exception number).
void board_report_unexpected_interrupt(uint32_t exception);

// The console UART's RX interrupt (vector 16 + SDK_CONSOLE_RX_IRQ).
void board_console_rx_handler(void);

// The Ethos-U's interrupt (vector 16 + SDK_NPU_IRQ), in npu.cpp.
void board_npu_irq_handler(void);
}
