// The board's Ethos-U55 platform (boards/<name>/): volatile register access at SDK_NPU_BASE,
// the NPU interrupt, a bounded wait on it, the D-cache hooks. main_board.cpp registers the
// Ethos-U backend with it in both modes.
#pragma once

#include "driver.h"

// Enables the NPU's interrupt (its handler calls ethosu::handle_npu_irq()) and returns the
// platform for ethosu::register_backend().
ethosu::NpuPlatform board_npu_platform();

// Makes the NPU's interrupt pending, as the NPU's IRQ line would (the virtual U55's raise_irq:
// the board's real handler then runs).
void board_npu_pend_irq();
