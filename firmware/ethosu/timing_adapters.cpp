#include "timing_adapters.h"

#include <string.h>

namespace ethosu {
namespace {

using rt::Error;

struct Text {
  const uint8_t* data;
  size_t size;
};

bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The value of `--name=value` or `--name value` among the whitespace-separated words of
// `flags` (the last one wins, as Vela's argument parser takes it); size 0 when absent.
Text flag_value(const uint8_t* flags, size_t size, const char* name) {
  const size_t name_size = strlen(name);
  Text found = {nullptr, 0};
  bool value_next = false;  // the previous word was `--name` alone
  size_t pos = 0;
  while (pos < size) {
    while (pos < size && is_space(flags[pos])) ++pos;
    const size_t start = pos;
    while (pos < size && !is_space(flags[pos])) ++pos;
    const size_t length = pos - start;
    if (length == 0) break;
    const bool is_flag = length >= 2 && flags[start] == '-' && flags[start + 1] == '-';
    if (value_next && !is_flag) {
      found = {flags + start, length};
      value_next = false;
      continue;
    }
    value_next = length == name_size && memcmp(flags + start, name, name_size) == 0;
    if (length > name_size + 1 && memcmp(flags + start, name, name_size) == 0 &&
        flags[start + name_size] == '=') {
      found = {flags + start + name_size + 1, length - name_size - 1};
    }
  }
  return found;
}

bool equals(Text t, const char* s) {
  return t.size == strlen(s) && memcmp(t.data, s, t.size) == 0;
}

}  // namespace

Error find_timing_config(const TimingAdapters& adapters, const uint8_t* flags, size_t size,
                         int32_t* index) {
  *index = kNoTimingConfig;
  if (adapters.count == 0 || flags == nullptr) {
    return Error::Ok;
  }
  const Text system = flag_value(flags, size, "--system-config");
  const Text mode = flag_value(flags, size, "--memory-mode");
  if (system.size == 0 || mode.size == 0) {
    return Error::Ok;  // Vela's built-in default: nothing the board documents either way
  }
  for (uint32_t i = 0; i < adapters.config_count; ++i) {
    const TimingAdapterConfig& c = adapters.configs[i];
    if (equals(system, c.system_config) && equals(mode, c.memory_mode)) {
      *index = static_cast<int32_t>(i);
      return Error::Ok;
    }
  }
  const int shown_system = system.size > 64 ? 64 : static_cast<int>(system.size);
  const int shown_mode = mode.size > 64 ? 64 : static_cast<int>(mode.size);
  return rt::fail(Error::NotSupported,
                  "compiled for Vela system config %.*s, memory mode %.*s: the board's timing "
                  "adapters have no setting for it (board.yaml npu_memories: its modes); export "
                  "the program again for this board (--npu-memory)",
                  shown_system, reinterpret_cast<const char*>(system.data), shown_mode,
                  reinterpret_cast<const char*>(mode.data));
}

}  // namespace ethosu
