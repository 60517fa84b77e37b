// Internal: the flatbuffer reader for ExecuTorch's program schema.
//
// program_generated.h is generated at build time by flatc from the schema
// shipped in the executorch wheel, into the build folder only.
#pragma once

#if defined(RT_FLATBUFFERS_NO_ASSERT) && !defined(FLATBUFFERS_ASSERT)
#define FLATBUFFERS_ASSERT(condition) ((void)0)
#endif

#include "program_generated.h"
#include "rt/program.h"

namespace rt {
namespace fb = executorch_flatbuffer;

inline const fb::Program* program_root(const Program& program) {
  return static_cast<const fb::Program*>(program.root());
}

// Length of a possibly absent flatbuffer vector.
template <typename V>
inline size_t vector_size(const V* v) {
  return v == nullptr ? 0 : v->size();
}

}  // namespace rt
