// The 16-bit floating types of ScalarType::Half (IEEE binary16) and ScalarType::BFloat16
// (the top half of a binary32), as ExecuTorch's c10::Half and c10::BFloat16 behave:
//   - storage is the 16 bits (`bits`), so a tensor's data is an array of them;
//   - conversion to float is exact (NaN payloads kept);
//   - float -> Half / BFloat16 rounds to nearest, ties to even; overflow gives an infinity;
//     a NaN becomes the canonical quiet NaN (Half: 0x7E00 with the NaN's sign, BFloat16:
//     0x7FC0), which is c10's portable conversion;
//   - anything else converts through float (double -> float -> Half rounds twice, as
//     static_cast<c10::Half>(double) does);
//   - arithmetic follows c10's operators: Half op Half computes in float and rounds back
//     to Half (so an accumulator of the type rounds at every step), Half op float is float,
//     Half op double is double, Half op an integer is Half; comparisons go through float.
// Plain portable C++, no FP16 hardware: the host and the Cortex-M55 give the same bits.
#pragma once

#include <stdint.h>
#include <string.h>

#include <type_traits>

namespace kernels {

namespace reduced_detail {

inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// binary32 -> binary16, round to nearest even.
inline uint16_t half_from_float(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t mag = u & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // NaN
  // From 65520 (65504 plus half its ulp, a tie that rounds to the even infinity) up.
  if (mag >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (mag < 0x38800000u) {
    // Below 2^-14: a subnormal half (or zero), in units of 2^-24. The value is
    // m * 2^(e - 150), so the units are m >> (126 - e), rounded.
    const uint32_t e = mag >> 23;
    const uint32_t shift = 126u - e;
    if (e == 0 || shift > 24) return static_cast<uint16_t>(sign);
    const uint32_t m = (mag & 0x7FFFFFu) | 0x800000u;
    uint32_t q = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (q & 1u) != 0)) ++q;
    return static_cast<uint16_t>(sign | q);  // q == 0x400 is the smallest normal
  }
  // Normal: rebias the exponent (127 -> 15), keep 10 of the 23 mantissa bits, round on
  // the 13 dropped (a carry into the exponent is right, up to the largest finite half).
  uint32_t h = (mag >> 13) - (112u << 10);
  const uint32_t rest = mag & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;
  return static_cast<uint16_t>(sign | h);
}

// binary16 -> binary32, exact.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1Fu;
  uint32_t m = h & 0x3FFu;
  if (e == 0x1Fu) return bits_float(sign | 0x7F800000u | (m << 13));  // inf, NaN
  if (e == 0) {
    if (m == 0) return bits_float(sign);
    // Subnormal: normalise (m * 2^-24).
    int32_t exp = 1;
    while ((m & 0x400u) == 0) {
      m <<= 1;
      --exp;
    }
    return bits_float(sign | (static_cast<uint32_t>(exp + 112) << 23) | ((m & 0x3FFu) << 13));
  }
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// binary32 -> bfloat16, round to nearest even.
inline uint16_t bf16_from_float(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;  // NaN
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

inline float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace reduced_detail

// Tag for building a value from its bits.
struct FromBits {};

#define KERNELS_REDUCED_FLOAT_(NAME, TO_FLOAT, FROM_FLOAT, MAX_BITS)                \
  struct NAME {                                                                     \
    uint16_t bits;                                                                  \
    NAME() = default;                                                               \
    constexpr NAME(uint16_t b, FromBits) : bits(b) {}                               \
    NAME(float f) : bits(reduced_detail::FROM_FLOAT(f)) {}                          \
    operator float() const { return reduced_detail::TO_FLOAT(bits); }               \
    static constexpr NAME max() { return NAME(MAX_BITS, FromBits{}); }              \
    static constexpr NAME lowest() { return NAME(MAX_BITS | 0x8000u, FromBits{}); } \
  };                                                                                \
  inline NAME operator+(NAME a, NAME b) { return NAME(float(a) + float(b)); }       \
  inline NAME operator-(NAME a, NAME b) { return NAME(float(a) - float(b)); }       \
  inline NAME operator*(NAME a, NAME b) { return NAME(float(a) * float(b)); }       \
  inline NAME operator/(NAME a, NAME b) { return NAME(float(a) / float(b)); }       \
  inline NAME operator-(NAME a) {                                                   \
    return NAME(static_cast<uint16_t>(a.bits ^ 0x8000u), FromBits{});               \
  }                                                                                 \
  inline NAME& operator+=(NAME& a, NAME b) { return a = a + b; }                    \
  inline NAME& operator-=(NAME& a, NAME b) { return a = a - b; }                    \
  inline NAME& operator*=(NAME& a, NAME b) { return a = a * b; }                    \
  inline NAME& operator/=(NAME& a, NAME b) { return a = a / b; }                    \
  inline float operator+(NAME a, float b) { return float(a) + b; }                  \
  inline float operator-(NAME a, float b) { return float(a) - b; }                  \
  inline float operator*(NAME a, float b) { return float(a) * b; }                  \
  inline float operator/(NAME a, float b) { return float(a) / b; }                  \
  inline float operator+(float a, NAME b) { return a + float(b); }                  \
  inline float operator-(float a, NAME b) { return a - float(b); }                  \
  inline float operator*(float a, NAME b) { return a * float(b); }                  \
  inline float operator/(float a, NAME b) { return a / float(b); }                  \
  inline float& operator+=(float& a, NAME b) { return a += float(b); }              \
  inline double operator+(NAME a, double b) { return double(float(a)) + b; }        \
  inline double operator*(NAME a, double b) { return double(float(a)) * b; }        \
  inline double operator+(double a, NAME b) { return a + double(float(b)); }        \
  inline double operator*(double a, NAME b) { return a * double(float(b)); }        \
  inline double& operator+=(double& a, NAME b) { return a += double(float(b)); }

KERNELS_REDUCED_FLOAT_(Half, half_to_float, half_from_float, 0x7BFFu)
KERNELS_REDUCED_FLOAT_(BFloat16, bf16_to_float, bf16_from_float, 0x7F7Fu)
#undef KERNELS_REDUCED_FLOAT_

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage");
static_assert(std::is_trivially_copyable_v<Half> && std::is_trivially_copyable_v<BFloat16>, "POD");

template <typename T>
constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Floating in the sense of ScalarType: float, double, Half, BFloat16.
template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || is_reduced_float_v<T>;

// The C++ arithmetic type an element computes in when it is read as a number (float for
// the reduced types, the type itself otherwise).
template <typename T>
using arith_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

}  // namespace kernels
