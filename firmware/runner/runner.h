// executor_runner's board-independent part: blobs in, result record out.
//
// A board's main (main_board.cpp) or the host's (firmware/host/main_host.cpp)
// finds the program and the inputs and calls these; everything they print
// follows docs/firmware.md.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/arena.h"
#include "rt/error.h"
#include "session.h"

namespace runner {

constexpr uint32_t kProgramMagic = 0x504b4453;  // "SDKP" little-endian
constexpr uint32_t kInputsMagic = 0x494b4453;   // "SDKI"
constexpr uint32_t kBlobVersion = 1;
constexpr size_t kBlobHeaderSize = 32;

// "@sdk begin v=1 board=<board>".
void begin(const char* board);

// Log text (not a record line): "executor_runner: <text>".
void log(const char* text);

// Check a preloaded blob (magic, version, size within the slot, reserved
// bytes, CRC) and return its payload. Fails with `error` and a reason.
rt::Error open_blob(const uint8_t* slot, size_t slot_size, uint32_t magic, rt::Error error,
                    rt::ConstBytes* payload);

// Print "@sdk result status=error ..." for `err` (with the last reason); returns the exit code.
int report_error(rt::Error err);

struct RunOptions {
  // Also print the output records when execute() fails, before the error result: what the
  // failing kernel left in them (the host runner's --outputs-on-error; tests check that a
  // kernel refusing a call wrote nothing). The run still fails.
  bool outputs_on_error = false;
};

// Set every input of `session` from an SDKI payload (count, records, data checked).
rt::Error set_inputs(Session& session, rt::ConstBytes inputs);

// Load the program, set the inputs from an SDKI payload, run once, and give the memory, the
// outputs and the result to `reporter`. Returns the exit code (0 = pass).
int run(Session& session, rt::ConstBytes program, rt::ConstBytes inputs, Reporter& reporter,
        const RunOptions& options = RunOptions{});

// The same with a Session over `memory`, reported as the `@sdk` text record.
int run(rt::ConstBytes program, rt::ConstBytes inputs, const RunnerMemory& memory,
        const RunOptions& options = RunOptions{});

}  // namespace runner
