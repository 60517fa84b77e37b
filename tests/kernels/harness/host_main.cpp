// Host harness: kernel_harness CASE RESULT [CASE RESULT ...]. Exit 0 when every
// case file was run (kernel failures are results, not harness failures).
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "case_runner.h"

namespace {

// One heap block per take(), sized exactly: a kernel reading or writing past
// its tensor hits a sanitizer redzone instead of a neighbour.
class HeapPool : public harness::Pool {
 public:
  ~HeapPool() {
    for (void* p : blocks_) free(p);
  }
  void* take(size_t n) override {
    void* p = malloc(n != 0 ? n : 1);  // malloc aligns for any element type
    if (p != nullptr) blocks_.push_back(p);
    return p;
  }

 private:
  std::vector<void*> blocks_;
};

bool read_file(const char* path, uint8_t*& data, size_t& size) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return false;
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = static_cast<uint8_t*>(malloc(n > 0 ? static_cast<size_t>(n) : 1));
  size = static_cast<size_t>(n);
  const bool ok = data != nullptr && fread(data, 1, size, f) == size;
  fclose(f);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc % 2 != 1) {
    fprintf(stderr, "usage: %s CASE RESULT [CASE RESULT ...]\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i += 2) {
    uint8_t* data = nullptr;
    size_t size = 0;
    if (!read_file(argv[i], data, size)) {
      fprintf(stderr, "%s: cannot read\n", argv[i]);
      return 2;
    }
    const size_t cap = size * 2 + (size_t{64} << 20);
    uint8_t* result = static_cast<uint8_t*>(malloc(cap));
    HeapPool pool;
    const char* why = "";
    const size_t n = harness::run_case(data, size, pool, result, cap, &why);
    if (n == 0) {
      fprintf(stderr, "%s: %s\n", argv[i], why);
      return 2;
    }
    FILE* f = fopen(argv[i + 1], "wb");
    if (f == nullptr || fwrite(result, 1, n, f) != n) {
      fprintf(stderr, "%s: cannot write\n", argv[i + 1]);
      return 2;
    }
    fclose(f);
    free(result);
    free(data);
  }
  return 0;
}
