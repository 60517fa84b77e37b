// Internal: verification of the flatbuffer parts of a program the runtime reads (verify.cpp).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace rt {

// True when every table, vector and string the runtime reads lies inside
// [data, data + size), is aligned, and nests within the limits. `data` must be
// 16-byte aligned (alignment is checked on absolute addresses). The runtime
// always checks that 8-byte vector elements are 8-byte aligned (flatc's own
// verifier does not); tests turn that off to compare the two verifiers.
bool verify_program_buffer(const uint8_t* data, size_t size, uint32_t max_depth,
                           uint32_t max_tables, bool check_element_alignment = true);

}  // namespace rt
