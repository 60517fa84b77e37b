// SHA-256 (FIPS 180-4), incremental: the host link checks a whole program with it.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace hostlink {

constexpr size_t kSha256Size = 32;

class Sha256 {
 public:
  Sha256() { reset(); }
  void reset();
  void update(const uint8_t* data, size_t size);
  void finish(uint8_t digest[kSha256Size]);  // the object must be reset() before reuse

 private:
  void block(const uint8_t* p);
  uint32_t state_[8];
  uint64_t length_;  // bytes so far
  uint8_t buffer_[64];
  size_t buffered_;
};

// One-shot digest of `size` bytes.
void sha256(const uint8_t* data, size_t size, uint8_t digest[kSha256Size]);

}  // namespace hostlink
