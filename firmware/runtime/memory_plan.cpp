// Laying out the program's planned buffers (activations, inputs, outputs) in
// the arenas the caller gives.
#include <string.h>

#include "method_internal.h"

namespace rt {

namespace {

Error buffer_size(const flatbuffers::Vector<int64_t>& sizes, size_t id, size_t* out) {
  int64_t size = sizes.Get(static_cast<flatbuffers::uoffset_t>(id));
  RT_CHECK(size >= 0 && static_cast<uint64_t>(size) <= kMaxSize - kPlannedAlignment,
           Error::InvalidProgram, "planned buffer %lu has an invalid size (%s bytes)", ul(id),
           int_text(size).text);
  *out = static_cast<size_t>(size);
  return Error::Ok;
}

}  // namespace

Error planned_bytes_needed(const fb::ExecutionPlan& plan, size_t* needed) {
  *needed = 0;
  const auto* sizes = plan.non_const_buffer_sizes();
  for (size_t id = 1; id < vector_size(sizes); ++id) {
    size_t size = 0;
    RT_TRY(buffer_size(*sizes, id, &size));
    RT_CHECK(add_size(*needed, align_up(size, kPlannedAlignment), needed), Error::InvalidProgram,
             "planned buffer sizes overflow");
  }
  return Error::Ok;
}

Error lay_out_planned_buffers(const fb::ExecutionPlan& plan, const Span* arenas,
                              size_t num_arenas, Span* buffers, size_t* used,
                              size_t* capacity) {
  RT_CHECK(num_arenas <= kMaxPlannedArenas, Error::InvalidArgument,
           "%lu planned arenas given, at most %lu supported", ul(num_arenas),
           ul(kMaxPlannedArenas));
  size_t cursor[kMaxPlannedArenas] = {};
  *capacity = 0;
  for (size_t j = 0; j < num_arenas; ++j) {
    RT_CHECK(arenas[j].data != nullptr || arenas[j].size == 0, Error::InvalidArgument,
             "planned arena %lu has no memory", ul(j));
    // Start each arena at an aligned address.
    uintptr_t base = reinterpret_cast<uintptr_t>(arenas[j].data);
    cursor[j] = static_cast<size_t>(align_up(base, kPlannedAlignment) - base);
    *capacity += arenas[j].size;
  }
  size_t needed = 0;
  RT_TRY(planned_bytes_needed(plan, &needed));
  const auto* sizes = plan.non_const_buffer_sizes();
  size_t count = vector_size(sizes);
  *used = 0;
  if (count > 0) {
    buffers[0] = Span{nullptr, 0};
  }
  for (size_t id = 1; id < count; ++id) {
    size_t size = 0;
    RT_TRY(buffer_size(*sizes, id, &size));
    bool placed = false;
    for (size_t j = 0; j < num_arenas && !placed; ++j) {
      size_t start = cursor[j];
      if (start <= arenas[j].size && size <= arenas[j].size - start) {
        buffers[id] = Span{arenas[j].data + start, size};
        memset(buffers[id].data, 0, size);  // deterministic contents from run to run
        cursor[j] = align_up(start + size, kPlannedAlignment);
        *used += size;
        placed = true;
      }
    }
    if (!placed) {
      size_t largest_free = 0;
      for (size_t j = 0; j < num_arenas; ++j) {
        size_t free_bytes = cursor[j] < arenas[j].size ? arenas[j].size - cursor[j] : 0;
        largest_free = free_bytes > largest_free ? free_bytes : largest_free;
      }
      return fail(Error::OutOfMemory,
                  "planned memory too small: buffer %lu needs %lu bytes, %lu free; the method "
                  "needs %lu bytes, the arenas have %lu",
                  ul(id), ul(size), ul(largest_free), ul(needed), ul(*capacity));
    }
  }
  return Error::Ok;
}

}  // namespace rt
