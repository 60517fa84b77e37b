// COBS: the reference examples, round trips of every length class, and every rejection.
#include <vector>

#include "cobs.h"
#include "test_harness.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes encode(const Bytes& in) {
  Bytes out(hostlink::cobs_max_encoded(in.size()));
  size_t n = hostlink::cobs_encode(in.data(), in.size(), out.data(), out.size());
  out.resize(n);
  return out;
}

bool decode(const Bytes& in, Bytes* out, size_t capacity = 70000) {
  out->assign(capacity, 0xEE);
  size_t n = 0;
  if (!hostlink::cobs_decode(in.data(), in.size(), out->data(), out->size(), &n)) {
    return false;
  }
  out->resize(n);
  return true;
}

Bytes run_of(size_t n) {  // no zero bytes
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(1 + i % 255);
  return b;
}

}  // namespace

TEST(cobs_reference_examples) {
  CHECK(encode({}) == Bytes({0x01}));
  CHECK(encode({0x00}) == Bytes({0x01, 0x01}));
  CHECK(encode({0x00, 0x00}) == Bytes({0x01, 0x01, 0x01}));
  CHECK(encode({0x11, 0x22, 0x00, 0x33}) == Bytes({0x03, 0x11, 0x22, 0x02, 0x33}));
  CHECK(encode({0x11, 0x22, 0x33, 0x44}) == Bytes({0x05, 0x11, 0x22, 0x33, 0x44}));
  CHECK(encode({0x11, 0x00, 0x00, 0x00}) == Bytes({0x02, 0x11, 0x01, 0x01, 0x01}));
  Bytes b254 = run_of(254);
  Bytes e254 = encode(b254);
  CHECK_EQ(e254.size(), 255);
  CHECK_EQ(e254[0], 0xFF);
  Bytes b255 = run_of(255);
  Bytes e255 = encode(b255);
  CHECK_EQ(e255.size(), 257);
  CHECK_EQ(e255[0], 0xFF);
  CHECK_EQ(e255[255], 0x02);
}

TEST(cobs_round_trips_without_zero_bytes) {
  uint32_t state = 12345;
  for (size_t n : {0u, 1u, 2u, 253u, 254u, 255u, 256u, 508u, 509u, 1000u, 4112u}) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      Bytes in(n);
      for (size_t i = 0; i < n; ++i) {
        state = state * 1103515245u + 12345u;
        uint8_t r = static_cast<uint8_t>(state >> 16);
        in[i] = pattern == 0 ? 0 : pattern == 1 ? static_cast<uint8_t>(r | 1) : (r % 7 == 0 ? 0 : r);
      }
      if (pattern == 3 && n > 0) in[n - 1] = 0;
      Bytes enc = encode(in);
      CHECK(!enc.empty() && enc.size() <= hostlink::cobs_max_encoded(n));
      for (uint8_t x : enc) CHECK(x != 0);
      Bytes out;
      CHECK(decode(enc, &out));
      CHECK(out == in);
      // In place, as the deframer does it.
      Bytes inplace = enc;
      size_t m = 0;
      CHECK(hostlink::cobs_decode(inplace.data(), inplace.size(), inplace.data(), inplace.size(), &m));
      CHECK(m == n && Bytes(inplace.begin(), inplace.begin() + static_cast<long>(m)) == in);
    }
  }
}

TEST(cobs_encode_refuses_a_small_buffer) {
  Bytes in(300, 7);
  Bytes out(hostlink::cobs_max_encoded(in.size()) - 1);
  CHECK_EQ(hostlink::cobs_encode(in.data(), in.size(), out.data(), out.size()), 0);
}

TEST(cobs_decode_rejects_bad_input) {
  Bytes out;
  CHECK(!decode({0x00}, &out));                     // a zero is never inside an encoding
  CHECK(!decode({0x03, 0x11, 0x00}, &out));         // zero inside a block
  CHECK(!decode({0x05, 0x11, 0x22}, &out));         // code runs past the end
  CHECK(!decode({0x02, 0x11, 0x00, 0x01}, &out));   // zero where a code belongs
  CHECK(!decode({0x03, 0x11, 0x22, 0x02, 0x33}, &out, 3));  // does not fit
  CHECK(decode({0x03, 0x11, 0x22, 0x02, 0x33}, &out, 4));
  CHECK(out == Bytes({0x11, 0x22, 0x00, 0x33}));
  CHECK(decode({}, &out));  // nothing at all decodes to nothing
  CHECK(out.empty());
}
