// Bare-metal case runner: the command line (semihosting) names a list file
// whose lines alternate case path and result path; each case is read, run
// through the kernels (Helium paths on) and its result written back.
#include <stdint.h>
#include <string.h>

#include "case_runner.h"
#include "semihost.h"

namespace {

constexpr size_t kFileMax = size_t{96} << 20;
constexpr size_t kPoolMax = size_t{256} << 20;
__attribute__((section(".ddr"), aligned(16))) uint8_t g_case[kFileMax];
__attribute__((section(".ddr"), aligned(16))) uint8_t g_result[kFileMax + (size_t{16} << 20)];
__attribute__((section(".ddr"), aligned(16))) uint8_t g_pool[kPoolMax];
char g_list[64 * 1024];

// Next '\n'-terminated line of *cursor (terminated in place), nullptr at the end.
char* next_line(char*& cursor) {
  while (*cursor == '\n') ++cursor;
  if (*cursor == '\0') return nullptr;
  char* line = cursor;
  while (*cursor != '\0' && *cursor != '\n') ++cursor;
  if (*cursor == '\n') *cursor++ = '\0';
  return line;
}

bool load(const char* path, uint8_t* buf, size_t cap, size_t& size) {
  const int h = semihost::open(path, false);
  if (h < 0) return false;
  const long n = semihost::length(h);
  const bool ok = n >= 0 && static_cast<size_t>(n) <= cap && semihost::read(h, buf, static_cast<size_t>(n));
  semihost::close(h);
  size = ok ? static_cast<size_t>(n) : 0;
  return ok;
}

}  // namespace

int main() {
  char cmd[512] = {};
  if (!semihost::cmdline(cmd, sizeof(cmd) - 1)) return 10;
  // "<image> <list file>"
  char* list_path = strchr(cmd, ' ');
  if (list_path == nullptr) return 11;
  ++list_path;
  size_t list_size = 0;
  if (!load(list_path, reinterpret_cast<uint8_t*>(g_list), sizeof(g_list) - 1, list_size)) return 12;
  g_list[list_size] = '\0';
  char* cursor = g_list;
  for (char* case_path = next_line(cursor); case_path != nullptr; case_path = next_line(cursor)) {
    char* result_path = next_line(cursor);
    if (result_path == nullptr) return 13;
    size_t size = 0;
    if (!load(case_path, g_case, sizeof(g_case), size)) return 14;
    harness::BumpPool pool(g_pool, sizeof(g_pool));
    const char* why = "";
    const size_t n = harness::run_case(g_case, size, pool, g_result, sizeof(g_result), &why);
    if (n == 0) {
      uart_write(case_path);
      uart_write(": ");
      uart_write(why);
      uart_write("\n");
      return 15;
    }
    const int h = semihost::open(result_path, true);
    if (h < 0 || !semihost::write(h, g_result, n)) return 16;
    semihost::close(h);
  }
  return 0;
}
