// The fixed-size delegate backend registry (see rt/backend.h).
#include <string.h>

#include "rt/backend.h"

namespace rt {
namespace {

const Backend* g_backends[kMaxBackends];
size_t g_num_backends = 0;

bool id_equals(const char* registered, const char* id, size_t id_size) {
  return strlen(registered) == id_size && memcmp(registered, id, id_size) == 0;
}

}  // namespace

Error register_backend(const Backend* backend) {
  RT_CHECK(backend != nullptr && backend->id != nullptr && backend->init != nullptr &&
               backend->execute != nullptr,
           Error::InvalidArgument, "register_backend: incomplete backend");
  RT_CHECK(find_backend(backend->id, strlen(backend->id)) == nullptr, Error::InvalidArgument,
           "backend '%s' is already registered", backend->id);
  RT_CHECK(g_num_backends < kMaxBackends, Error::OutOfMemory,
           "backend registry full (%u entries): cannot add '%s'",
           static_cast<unsigned>(kMaxBackends), backend->id);
  g_backends[g_num_backends++] = backend;
  return Error::Ok;
}

const Backend* find_backend(const char* id, size_t id_size) {
  for (size_t i = 0; i < g_num_backends; ++i) {
    if (id_equals(g_backends[i]->id, id, id_size)) {
      return g_backends[i];
    }
  }
  return nullptr;
}

size_t num_backends() { return g_num_backends; }

void clear_backends() { g_num_backends = 0; }

}  // namespace rt
