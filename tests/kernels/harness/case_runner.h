// Runs a "case": values and kernel calls described by a file the Python tests
// write (tests/kernels/kcase.py documents the format), against the kernels
// linked in (rt::kKernelTable), and writes a result file with the status and
// every arena's bytes. Shared by the host and the bare-metal harness; all
// memory comes from one caller-given pool.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace harness {

// Where a case's memory comes from. The host gives every block its own heap
// allocation so the address sanitizer catches a kernel that leaves its tensor;
// bare metal bumps through one static region.
class Pool {
 public:
  // 16-byte aligned, zero-size allowed; nullptr when exhausted.
  virtual void* take(size_t n) = 0;

 protected:
  ~Pool() = default;
};

class BumpPool : public Pool {
 public:
  BumpPool(uint8_t* base, size_t size) : base_(base), size_(size) {}
  void* take(size_t n) override;
  size_t used() const { return used_; }

 private:
  uint8_t* base_;
  size_t size_;
  size_t used_ = 0;
};

// Executes `case_data` (which must stay valid: lists point into it) and
// writes the result into `result`, returning its size (0 when the case file
// itself is malformed; `why` says why).
size_t run_case(const uint8_t* case_data, size_t case_size, Pool& pool, uint8_t* result, size_t result_cap,
                const char** why);

}  // namespace harness
