// Matrix multiply C (m x p) = A (m x n) @ B (n x p), row-major, one dtype,
// shared by bmm, mm, addmm; and C = A @ W^T with W (p x n) row-major
// (matmul_transposed, for linear: nn.Linear's weight as stored).
// Semantics of ExecuTorch's portable kernels:
//   - each output element sums k = 0..n-1 in order, starting from 0;
//   - integer dtypes accumulate in the dtype itself, wrapping: the result is
//     the exact sum of products modulo 2^bits (int8 and uint8 included);
//   - Half and BFloat16 accumulate in the dtype too: each product and each partial sum
//     rounds to it (c10's arithmetic: ExecuTorch's `CTYPE sum = 0; sum += x * y`);
//   - n == 0 gives zeros.
// Helium: a 3-row x 2-vector register block (6 accumulators + 2 B vectors =
// the 8 Q registers), A read as pairs of k. Float uses fused multiply-add, so
// float results may differ from the scalar path in the last bits; integer
// lanes wrap in their own width, which is exactly the modular result.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/reduced_float.h"

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif

namespace kernels {
namespace matmul_detail {

// The portable path. k runs outermost per row so B is read along rows; each
// output element still sums its products in k order, from 0.
template <typename T>
void matmul_scalar(const T* a, const T* b, T* c, size_t m, size_t n, size_t p) {
  if constexpr (is_float_v<T>) {
    for (size_t i = 0; i < m; ++i) {
      T* row = c + i * p;
      for (size_t j = 0; j < p; ++j) row[j] = T(0);
      for (size_t k = 0; k < n; ++k) {
        const T x = a[i * n + k];
        const T* brow = b + k * p;
        for (size_t j = 0; j < p; ++j) row[j] += x * brow[j];
      }
    }
  } else {
    // Wrapping arithmetic without signed overflow: unsigned of the same width
    // (at least unsigned int, so narrow types do not promote back to int).
    using U = std::conditional_t<(sizeof(T) > 4), uint64_t, uint32_t>;
    for (size_t i = 0; i < m; ++i) {
      T* row = c + i * p;
      for (size_t j = 0; j < p; ++j) row[j] = T(0);
      for (size_t k = 0; k < n; ++k) {
        const U x = static_cast<U>(a[i * n + k]);
        const T* brow = b + k * p;
        for (size_t j = 0; j < p; ++j) {
          row[j] = static_cast<T>(static_cast<U>(row[j]) + x * static_cast<U>(brow[j]));
        }
      }
    }
  }
}

#if defined(__ARM_FEATURE_MVE)
// One lane type of the Helium kernel: vector type, loads/stores (predicated
// for edges), multiply-accumulate by a scalar, and the instructions of the
// full-block assembly loop.
template <typename T>
struct Lanes;

#if (__ARM_FEATURE_MVE & 2)
template <>
struct Lanes<float> {
  using V = float32x4_t;
  static constexpr size_t kLanes = 4;
  static V zero() { return vdupq_n_f32(0.0f); }
  static V load(const float* p, mve_pred16_t m) { return vldrwq_z_f32(p, m); }
  static void store(float* p, V v, mve_pred16_t m) { vstrwq_p_f32(p, v, m); }
  static V mla(V acc, V b, float a) { return vfmaq_n_f32(acc, b, a); }
  static mve_pred16_t pred(size_t n) { return vctp32q(static_cast<uint32_t>(n)); }
  static void store_all(float* p, V v) { vst1q_f32(p, v); }
};
#endif
template <>
struct Lanes<int32_t> {
  using V = int32x4_t;
  static constexpr size_t kLanes = 4;
  static V zero() { return vdupq_n_s32(0); }
  static V load(const int32_t* p, mve_pred16_t m) { return vldrwq_z_s32(p, m); }
  static void store(int32_t* p, V v, mve_pred16_t m) { vstrwq_p_s32(p, v, m); }
  static V mla(V acc, V b, int32_t a) { return vmlaq_n_s32(acc, b, a); }
  static mve_pred16_t pred(size_t n) { return vctp32q(static_cast<uint32_t>(n)); }
  static void store_all(int32_t* p, V v) { vst1q_s32(p, v); }
};
template <>
struct Lanes<int16_t> {
  using V = int16x8_t;
  static constexpr size_t kLanes = 8;
  static V zero() { return vdupq_n_s16(0); }
  static V load(const int16_t* p, mve_pred16_t m) { return vldrhq_z_s16(p, m); }
  static void store(int16_t* p, V v, mve_pred16_t m) { vstrhq_p_s16(p, v, m); }
  static V mla(V acc, V b, int16_t a) { return vmlaq_n_s16(acc, b, a); }
  static mve_pred16_t pred(size_t n) { return vctp16q(static_cast<uint32_t>(n)); }
  static void store_all(int16_t* p, V v) { vst1q_s16(p, v); }
};
// uint8 runs through this too: wrapping products modulo 2^8 do not depend on
// the sign interpretation.
template <>
struct Lanes<int8_t> {
  using V = int8x16_t;
  static constexpr size_t kLanes = 16;
  static V zero() { return vdupq_n_s8(0); }
  static V load(const int8_t* p, mve_pred16_t m) { return vldrbq_z_s8(p, m); }
  static void store(int8_t* p, V v, mve_pred16_t m) { vstrbq_p_s8(p, v, m); }
  static V mla(V acc, V b, int8_t a) { return vmlaq_n_s8(acc, b, a); }
  static mve_pred16_t pred(size_t n) { return vctp8q(static_cast<uint32_t>(n)); }
  static void store_all(int8_t* p, V v) { vst1q_s8(p, v); }
};

// Rows r0..r0+R of C, columns [j, j + w) with w <= 2 * kLanes; any R, any w
// (predicated). Used for the edges the assembly block does not cover.
template <typename T, int R>
void block_edge(const T* a, const T* b, T* c, size_t n, size_t p, size_t w) {
  using L = Lanes<T>;
  using V = typename L::V;
  const mve_pred16_t m0 = L::pred(w);
  const mve_pred16_t m1 = L::pred(w > L::kLanes ? w - L::kLanes : 0);
  V acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = L::zero();
  for (size_t k = 0; k < n; ++k) {
    const V b0 = L::load(b + k * p, m0);
    const V b1 = L::load(b + k * p + L::kLanes, m1);
    for (int r = 0; r < R; ++r) {
      const T x = a[r * n + k];
      acc[r][0] = L::mla(acc[r][0], b0, x);
      acc[r][1] = L::mla(acc[r][1], b1, x);
    }
  }
  for (int r = 0; r < R; ++r) {
    L::store(c + r * p, acc[r][0], m0);
    L::store(c + r * p + L::kLanes, acc[r][1], m1);
  }
}

// The full 3 x (2 * kLanes) block, written out: GCC 12 spills the six
// accumulators of the intrinsic form. Per pair of k, A is read with one ldrd
// (32-bit) or two ldrh/ldrb per row, B with four vector loads, and twelve
// multiply-accumulates do 24 vectors of work: 22 instructions for 48 float
// MACs. An odd k goes first, alone, so every element still sums in k order.
#define KERNELS_BMM_BLOCK_ASM(LOAD_A_ONE, LOAD_A_PAIR, VLD, VMLA)                                       \
  __asm__ volatile(                                                                                     \
      "\tvmov.i32 %q[c00], #0\n\tvmov.i32 %q[c01], #0\n\tvmov.i32 %q[c10], #0\n"                       \
      "\tvmov.i32 %q[c11], #0\n\tvmov.i32 %q[c20], #0\n\tvmov.i32 %q[c21], #0\n"                       \
      "\tlsrs %[n], %[n], #1\n"                                                                         \
      "\tbcc 2f\n" LOAD_A_ONE                                                                           \
      "\t" VLD " %q[t0], [%[b]]\n"                                                                      \
      "\t" VLD " %q[t1], [%[b], #16]\n"                                                                 \
      "\tadd %[b], %[b], %[stride]\n"                                                                   \
      "\t" VMLA " %q[c00], %q[t0], %Q[p0]\n"                                                            \
      "\t" VMLA " %q[c10], %q[t0], %Q[p1]\n"                                                            \
      "\t" VMLA " %q[c20], %q[t0], %Q[p2]\n"                                                            \
      "\t" VMLA " %q[c01], %q[t1], %Q[p0]\n"                                                            \
      "\t" VMLA " %q[c11], %q[t1], %Q[p1]\n"                                                            \
      "\t" VMLA " %q[c21], %q[t1], %Q[p2]\n"                                                            \
      "2:\n"                                                                                            \
      "\twls lr, %[n], 3f\n"                                                                            \
      "1:\n" LOAD_A_PAIR                                                                                \
      "\t" VLD " %q[t0], [%[b]]\n"                                                                      \
      "\t" VLD " %q[t1], [%[b], #16]\n"                                                                 \
      "\tadd %[b], %[b], %[stride]\n"                                                                   \
      "\t" VMLA " %q[c00], %q[t0], %Q[p0]\n"                                                            \
      "\t" VMLA " %q[c10], %q[t0], %Q[p1]\n"                                                            \
      "\t" VMLA " %q[c20], %q[t0], %Q[p2]\n"                                                            \
      "\t" VLD " %q[t0], [%[b]]\n"                                                                      \
      "\t" VMLA " %q[c01], %q[t1], %Q[p0]\n"                                                            \
      "\t" VMLA " %q[c11], %q[t1], %Q[p1]\n"                                                            \
      "\t" VMLA " %q[c21], %q[t1], %Q[p2]\n"                                                            \
      "\t" VLD " %q[t1], [%[b], #16]\n"                                                                 \
      "\tadd %[b], %[b], %[stride]\n"                                                                   \
      "\t" VMLA " %q[c00], %q[t0], %R[p0]\n"                                                            \
      "\t" VMLA " %q[c10], %q[t0], %R[p1]\n"                                                            \
      "\t" VMLA " %q[c20], %q[t0], %R[p2]\n"                                                            \
      "\t" VMLA " %q[c01], %q[t1], %R[p0]\n"                                                            \
      "\t" VMLA " %q[c11], %q[t1], %R[p1]\n"                                                            \
      "\t" VMLA " %q[c21], %q[t1], %R[p2]\n"                                                            \
      "\tle lr, 1b\n"                                                                                   \
      "3:\n"                                                                                            \
      : [c00] "=&w"(c00), [c01] "=&w"(c01), [c10] "=&w"(c10), [c11] "=&w"(c11), [c20] "=&w"(c20),      \
        [c21] "=&w"(c21), [t0] "=&w"(t0), [t1] "=&w"(t1), [p0] "=&r"(p0), [p1] "=&r"(p1), [p2] "=&r"(p2), \
        [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [b] "+r"(bp), [n] "+r"(count)                      \
      : [stride] "r"(stride)                                                                            \
      : "lr", "cc", "memory")

#define KERNELS_LOAD_A_ONE(INSN, BYTES)                                                              \
  "\t" INSN " %Q[p0], [%[a0]], #" BYTES "\n\t" INSN " %Q[p1], [%[a1]], #" BYTES "\n\t" INSN " %Q[p2], " \
  "[%[a2]], #" BYTES "\n"
#define KERNELS_LOAD_A_PAIRS_32                  \
  "\tldrd %Q[p0], %R[p0], [%[a0]], #8\n"         \
  "\tldrd %Q[p1], %R[p1], [%[a1]], #8\n"         \
  "\tldrd %Q[p2], %R[p2], [%[a2]], #8\n"
#define KERNELS_LOAD_A_PAIRS(INSN, BYTES)                                           \
  "\t" INSN " %Q[p0], [%[a0]], #" BYTES "\n\t" INSN " %R[p0], [%[a0]], #" BYTES "\n" \
  "\t" INSN " %Q[p1], [%[a1]], #" BYTES "\n\t" INSN " %R[p1], [%[a1]], #" BYTES "\n" \
  "\t" INSN " %Q[p2], [%[a2]], #" BYTES "\n\t" INSN " %R[p2], [%[a2]], #" BYTES "\n"

template <typename T>
void block_full(const T* a, const T* b, T* c, size_t n, size_t p) {
  using L = Lanes<T>;
  using V = typename L::V;
  V c00, c01, c10, c11, c20, c21, t0, t1;
  uint64_t p0, p1, p2;
  const T* a0 = a;
  const T* a1 = a + n;
  const T* a2 = a + 2 * n;
  const T* bp = b;
  uint32_t count = static_cast<uint32_t>(n);
  const uint32_t stride = static_cast<uint32_t>(p * sizeof(T));
  if constexpr (std::is_same_v<T, float>) {
    KERNELS_BMM_BLOCK_ASM(KERNELS_LOAD_A_ONE("ldr", "4"), KERNELS_LOAD_A_PAIRS_32, "vldrw.32", "vfma.f32");
  } else if constexpr (std::is_same_v<T, int32_t>) {
    KERNELS_BMM_BLOCK_ASM(KERNELS_LOAD_A_ONE("ldr", "4"), KERNELS_LOAD_A_PAIRS_32, "vldrw.32", "vmla.s32");
  } else if constexpr (std::is_same_v<T, int16_t>) {
    KERNELS_BMM_BLOCK_ASM(KERNELS_LOAD_A_ONE("ldrh", "2"), KERNELS_LOAD_A_PAIRS("ldrh", "2"), "vldrh.16",
                          "vmla.s16");
  } else {
    KERNELS_BMM_BLOCK_ASM(KERNELS_LOAD_A_ONE("ldrb", "1"), KERNELS_LOAD_A_PAIRS("ldrb", "1"), "vldrb.8",
                          "vmla.s8");
  }
  (void)t0;
  (void)t1;
  (void)p0;
  (void)p1;
  (void)p2;
  L::store_all(c, c00);
  L::store_all(c + L::kLanes, c01);
  L::store_all(c + p, c10);
  L::store_all(c + p + L::kLanes, c11);
  L::store_all(c + 2 * p, c20);
  L::store_all(c + 2 * p + L::kLanes, c21);
}

template <typename T>
void matmul_mve(const T* a, const T* b, T* c, size_t m, size_t n, size_t p) {
  constexpr size_t kW = 2 * Lanes<T>::kLanes;
  size_t i = 0;
  for (; i + 3 <= m; i += 3) {
    size_t j = 0;
    for (; j + kW <= p; j += kW) block_full<T>(a + i * n, b + j, c + i * p + j, n, p);
    if (j < p) block_edge<T, 3>(a + i * n, b + j, c + i * p + j, n, p, p - j);
  }
  for (size_t j = 0; j < p; j += kW) {
    const size_t w = p - j < kW ? p - j : kW;
    if (m - i == 2) block_edge<T, 2>(a + i * n, b + j, c + i * p + j, n, p, w);
    if (m - i == 1) block_edge<T, 1>(a + i * n, b + j, c + i * p + j, n, p, w);
  }
}

// The lane type that computes T on Helium, void when none does.
template <typename T>
using MveLane = std::conditional_t<
#if (__ARM_FEATURE_MVE & 2)
    std::is_same_v<T, float>, float,
#else
    false, void,
#endif
    std::conditional_t<std::is_same_v<T, int32_t>, int32_t,
                       std::conditional_t<std::is_same_v<T, int16_t>, int16_t,
                                          std::conditional_t<sizeof(T) == 1 && !std::is_same_v<T, bool>, int8_t,
                                                             void>>>>;
#endif  // __ARM_FEATURE_MVE

template <typename T>
void matmul(const T* a, const T* b, T* c, size_t m, size_t n, size_t p) {
#if defined(__ARM_FEATURE_MVE)
  using LaneT = MveLane<T>;
  if constexpr (!std::is_void_v<LaneT>) {
    matmul_mve<LaneT>(reinterpret_cast<const LaneT*>(a), reinterpret_cast<const LaneT*>(b),
                      reinterpret_cast<LaneT*>(c), m, n, p);
    return;
  }
#endif
  matmul_scalar<T>(a, b, c, m, n, p);
}

// C (m x p) = A (m x n) @ W^T, W (p x n) row-major: each element is the dot of
// a row of A with a row of W, k in order from 0; integers wrap as above (no
// Helium path yet: the scalar order on the board too).
template <typename T>
void matmul_transposed(const T* a, const T* w, T* c, size_t m, size_t n, size_t p) {
  using U = std::conditional_t<(sizeof(T) > 4), uint64_t, uint32_t>;
  for (size_t i = 0; i < m; ++i) {
    const T* arow = a + i * n;
    for (size_t j = 0; j < p; ++j) {
      const T* wrow = w + j * n;
      if constexpr (is_float_v<T>) {
        T acc = T(0);
        for (size_t k = 0; k < n; ++k) acc += arow[k] * wrow[k];
        c[i * p + j] = acc;
      } else {
        U acc = 0;
        for (size_t k = 0; k < n; ++k) acc += static_cast<U>(arow[k]) * static_cast<U>(wrow[k]);
        c[i * p + j] = static_cast<T>(acc);
      }
    }
  }
}

}  // namespace matmul_detail

// matmul<T>(a, b, c, m, n, p): c = a @ b (see the top of this file); c must not overlap a or b.
using matmul_detail::matmul;
// matmul_transposed<T>(a, w, c, m, n, p): c = a @ w^T; c must not overlap a or w.
using matmul_detail::matmul_transposed;

}  // namespace kernels

#undef KERNELS_BMM_BLOCK_ASM
#undef KERNELS_LOAD_A_ONE
#undef KERNELS_LOAD_A_PAIRS_32
#undef KERNELS_LOAD_A_PAIRS
