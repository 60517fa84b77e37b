// executor_runner's board-independent part beside the link: the program a host preloads into
// the program slot (LOAD_SLOT, docs/link.md), read in place.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "contract.h"
#include "rt/arena.h"
#include "rt/error.h"
#include "session.h"

namespace runner {

// Check the program blob in the program slot (magic, version, size within the slot, reserved
// bytes, CRC; the layout is contract.yaml's program_blob_header) and return its payload.
// InvalidProgram with a reason otherwise.
rt::Error open_program_blob(const uint8_t* slot, size_t slot_size, rt::ConstBytes* payload);

// `bytes` is ExecuTorch's BundledProgram (.bpte: file identifier "BP08")?
bool is_bundle(rt::ConstBytes bytes);
// The program inside a BundledProgram, in place (no copy): the bundle verified as a whole
// (flatbuffers' verifier) and its `program` vector returned. InvalidProgram otherwise.
rt::Error program_in_bundle(rt::ConstBytes bundle, rt::ConstBytes* program);

}  // namespace runner
