// SHA-256 against the FIPS 180-2 / NIST example vectors, whole and fed in odd pieces.
#include <string.h>

#include <string>

#include "sha256.h"
#include "test_harness.h"

namespace {

std::string hex(const uint8_t* d, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[d[i] >> 4];
    out += kDigits[d[i] & 15];
  }
  return out;
}

std::string digest_of(const std::string& text) {
  uint8_t d[hostlink::kSha256Size];
  hostlink::sha256(reinterpret_cast<const uint8_t*>(text.data()), text.size(), d);
  return hex(d, sizeof(d));
}

}  // namespace

TEST(sha256_empty) {
  CHECK(digest_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(sha256_abc) {
  CHECK(digest_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(sha256_two_blocks_448_bits) {
  CHECK(digest_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(sha256_896_bits) {
  CHECK(digest_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                  "klmnopqrlmnopqrsmnopqrstnopqrstu") ==
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(sha256_a_million_a_in_odd_pieces) {
  std::string chunk(997, 'a');
  hostlink::Sha256 h;
  size_t left = 1000000;
  size_t piece = 1;
  while (left > 0) {
    size_t n = piece < left ? piece : left;
    n = n < chunk.size() ? n : chunk.size();
    h.update(reinterpret_cast<const uint8_t*>(chunk.data()), n);
    left -= n;
    piece = piece * 3 % 1000 + 1;  // sizes across block boundaries
  }
  uint8_t d[hostlink::kSha256Size];
  h.finish(d);
  CHECK(hex(d, sizeof(d)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(sha256_lengths_around_the_padding_boundary_match_one_shot) {
  // 55, 56, 63, 64, 65 bytes: where the length field moves to a second block.
  std::string text(130, 'x');
  for (size_t n : {55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 128u}) {
    uint8_t whole[hostlink::kSha256Size];
    uint8_t pieces[hostlink::kSha256Size];
    hostlink::sha256(reinterpret_cast<const uint8_t*>(text.data()), n, whole);
    hostlink::Sha256 h;
    for (size_t i = 0; i < n; ++i) h.update(reinterpret_cast<const uint8_t*>(text.data()) + i, 1);
    h.finish(pieces);
    CHECK(memcmp(whole, pieces, sizeof(whole)) == 0);
  }
  CHECK(digest_of(std::string(64, 'a')) ==
        "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}
