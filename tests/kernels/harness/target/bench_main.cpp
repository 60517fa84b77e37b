// Instruction counts of kernels under QEMU -icount shift=0 (SysTick then runs
// in step with retired instructions; a loop of known length calibrates it).
// Prints one "@bench" line per measurement on UART0; bench/kernels_bench.py
// parses them. Each kernel is compared with a plain scalar loop compiled with
// the same flags.
#include <stdint.h>
#include <string.h>

#include "rt/kernel.h"
#include "rt/tensor.h"
#include "rt/value.h"
#include "semihost.h"

namespace {

__attribute__((section(".ddr"), aligned(16))) uint8_t g_a[1 << 20];
__attribute__((section(".ddr"), aligned(16))) uint8_t g_b[1 << 20];
__attribute__((section(".ddr"), aligned(16))) uint8_t g_c[1 << 20];
__attribute__((section(".ddr"), aligned(16))) uint8_t g_d[1 << 20];

rt::KernelFn kernel(const char* name) {
  for (size_t i = 0; i < rt::kKernelTableSize; ++i) {
    if (strcmp(rt::kKernelTable[i].name, name) == 0) return rt::kKernelTable[i].fn;
  }
  semihost::exit(20);
}

rt::Tensor tensor(void* data, rt::ScalarType dtype, size_t esize, const int32_t* sizes, int dim) {
  rt::Tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.dim = static_cast<uint8_t>(dim);
  t.numel = 1;
  for (int d = 0; d < dim; ++d) {
    t.sizes[d] = sizes[d];
    t.numel *= static_cast<size_t>(sizes[d]);
  }
  t.nbytes = t.numel * esize;
  return t;
}

rt::Value tensor_value(rt::Tensor* t) {
  rt::Value v{};
  v.tag = rt::Tag::Tensor;
  v.u.t = t;
  return v;
}

// 2 instructions per iteration: subs + bne.
__attribute__((noinline)) void spin(uint32_t n) {
  __asm__ volatile(
      "1: subs %0, %0, #1\n"
      "   bne 1b\n"
      : "+r"(n)
      :
      : "cc");
}

void report(const char* name, uint64_t ticks, uint64_t work, const char* unit) {
  uart_write("@bench name=");
  uart_write(name);
  uart_write(" ticks=");
  uart_write_uint(ticks);
  uart_write(" work=");
  uart_write_uint(work);
  uart_write(" unit=");
  uart_write(unit);
  uart_write("\n");
}

template <typename Fn>
uint64_t measure(Fn&& fn) {
  const uint64_t t0 = ticks_now();
  fn();
  return ticks_now() - t0;
}

template <typename T, typename Acc>
__attribute__((noinline)) void naive_bmm(const T* a, const T* b, T* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      Acc sum = 0;
      for (int x = 0; x < k; ++x) sum += static_cast<Acc>(a[i * k + x]) * static_cast<Acc>(b[x * n + j]);
      c[i * n + j] = static_cast<T>(sum);
    }
  }
}

__attribute__((noinline)) void naive_copy(uint8_t* dst, const uint8_t* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = src[i];
}

template <typename T, typename Acc>
void bench_bmm(const char* name, const char* naive_name, rt::ScalarType dtype, int m, int k, int n) {
  T* a = reinterpret_cast<T*>(g_a);
  T* b = reinterpret_cast<T*>(g_b);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<T>((i * 7) % 13 - 6);
  for (int i = 0; i < k * n; ++i) b[i] = static_cast<T>((i * 5) % 11 - 5);
  const int32_t as[3] = {1, m, k}, bs[3] = {1, k, n}, cs[3] = {1, m, n};
  rt::Tensor ta = tensor(a, dtype, sizeof(T), as, 3);
  rt::Tensor tb = tensor(b, dtype, sizeof(T), bs, 3);
  rt::Tensor tc = tensor(g_c, dtype, sizeof(T), cs, 3);
  rt::Value va = tensor_value(&ta), vb = tensor_value(&tb), vc = tensor_value(&tc);
  rt::Value* args[4] = {&va, &vb, &vc, &vc};
  rt::KernelContext ctx{nullptr, 0};
  const rt::KernelFn bmm = kernel("aten::bmm.out");
  const uint64_t macs = static_cast<uint64_t>(m) * k * n;
  rt::Error err = rt::Error::Ok;
  report(name, measure([&] { err = bmm(ctx, args, 4); }), macs, "MAC");
  if (err != rt::Error::Ok) semihost::exit(21);
  report(naive_name, measure([&] { naive_bmm<T, Acc>(a, b, reinterpret_cast<T*>(g_d), m, k, n); }), macs, "MAC");
  // Both must agree (exactly for integers; floats sum in the same k order, the
  // kernel fusing multiply-add): a cheap guard that the measured code is right.
  for (int i = 0; i < m * n; ++i) {
    const T x = reinterpret_cast<T*>(g_c)[i], y = reinterpret_cast<T*>(g_d)[i];
    const T diff = x > y ? x - y : y - x;
    if (diff > static_cast<T>(1e-3)) semihost::exit(22);
  }
}

void bench_split(int rows, int cols, int first) {
  int8_t* in = reinterpret_cast<int8_t*>(g_a);
  for (int i = 0; i < rows * cols; ++i) in[i] = static_cast<int8_t>(i);
  const int32_t is[2] = {rows, cols}, s0[2] = {rows, first}, s1[2] = {rows, cols - first};
  rt::Tensor ti = tensor(in, rt::ScalarType::Char, 1, is, 2);
  rt::Tensor t0 = tensor(g_c, rt::ScalarType::Char, 1, s0, 2);
  rt::Tensor t1 = tensor(g_d, rt::ScalarType::Char, 1, s1, 2);
  const int64_t sizes[2] = {first, cols - first};
  rt::Tensor* outs[2] = {&t0, &t1};
  rt::Value vi = tensor_value(&ti), vs{}, vd{}, vo{};
  vs.tag = rt::Tag::IntList;
  vs.u.int_list = rt::ArrayRef<int64_t>{sizes, 2};
  vd.tag = rt::Tag::Int;
  vd.u.i = 1;
  vo.tag = rt::Tag::TensorList;
  vo.u.tensor_list = rt::ArrayRef<rt::Tensor*>{outs, 2};
  rt::Value* args[5] = {&vi, &vs, &vd, &vo, &vo};
  rt::KernelContext ctx{nullptr, 0};
  const rt::KernelFn split = kernel("aten::split_with_sizes_copy.out");
  const uint64_t bytes = static_cast<uint64_t>(rows) * cols;
  rt::Error err = rt::Error::Ok;
  report("split_with_sizes_copy/int8", measure([&] { err = split(ctx, args, 5); }), bytes, "byte");
  if (err != rt::Error::Ok) semihost::exit(23);
  report("split/naive byte loop", measure([&] {
           for (int r = 0; r < rows; ++r) {
             naive_copy(reinterpret_cast<uint8_t*>(g_b) + r * first, g_a + r * cols, first);
             naive_copy(reinterpret_cast<uint8_t*>(g_b) + rows * first + r * (cols - first), g_a + r * cols + first,
                        cols - first);
           }
         }),
         bytes, "byte");
  report("split/newlib memcpy", measure([&] {
           for (int r = 0; r < rows; ++r) {
             memcpy(g_b + r * first, g_a + r * cols, first);
             memcpy(g_b + rows * first + r * (cols - first), g_a + r * cols + first, cols - first);
           }
         }),
         bytes, "byte");
  if (memcmp(g_c, g_b, static_cast<size_t>(rows) * first) != 0) semihost::exit(24);
}

rt::Value scalar_value(rt::Tag tag, int64_t i, double d) {
  rt::Value v{};
  v.tag = tag;
  if (tag == rt::Tag::Double) {
    v.u.d = d;
  } else {
    v.u.i = i;
  }
  return v;
}

__attribute__((noinline)) void naive_add(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

__attribute__((noinline)) void naive_quantize(const float* x, int8_t* q, int n, float inv_scale, int zp) {
  for (int i = 0; i < n; ++i) {
    float r = __builtin_nearbyintf(x[i] * inv_scale) + static_cast<float>(zp);
    r = r < -128.0f ? -128.0f : (r > 127.0f ? 127.0f : r);
    q[i] = static_cast<int8_t>(r);
  }
}

// Element-wise float add and int8 quantize: instructions per element.
void bench_elementwise(int n) {
  float* a = reinterpret_cast<float*>(g_a);
  float* b = reinterpret_cast<float*>(g_b);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 97) * 0.37f - 11.0f;
    b[i] = static_cast<float>(i % 31) * 0.11f;
  }
  const int32_t sizes[1] = {n};
  rt::Tensor ta = tensor(a, rt::ScalarType::Float, 4, sizes, 1);
  rt::Tensor tb = tensor(b, rt::ScalarType::Float, 4, sizes, 1);
  rt::Tensor tc = tensor(g_c, rt::ScalarType::Float, 4, sizes, 1);
  rt::Tensor tq = tensor(g_d, rt::ScalarType::Char, 1, sizes, 1);
  rt::Value va = tensor_value(&ta), vb = tensor_value(&tb), vc = tensor_value(&tc), vq = tensor_value(&tq);
  rt::Value one = scalar_value(rt::Tag::Int, 1, 0.0);
  rt::Value* add_args[5] = {&va, &vb, &one, &vc, &vc};
  rt::KernelContext ctx{nullptr, 0};
  rt::Error err = rt::Error::Ok;
  const rt::KernelFn add = kernel("aten::add.out");
  report("add.out/float32", measure([&] { err = add(ctx, add_args, 5); }), n, "element");
  if (err != rt::Error::Ok) semihost::exit(25);
  report("add/naive loop", measure([&] { naive_add(a, b, reinterpret_cast<float*>(g_b) + n, n); }), n, "element");

  rt::Value scale = scalar_value(rt::Tag::Double, 0, 0.05), zp = scalar_value(rt::Tag::Int, 3, 0.0);
  rt::Value lo = scalar_value(rt::Tag::Int, -128, 0.0), hi = scalar_value(rt::Tag::Int, 127, 0.0);
  rt::Value dtype = scalar_value(rt::Tag::Int, static_cast<int64_t>(rt::ScalarType::Char), 0.0);
  rt::Value* q_args[8] = {&va, &scale, &zp, &lo, &hi, &dtype, &vq, &vq};
  const rt::KernelFn quantize = kernel("quantized_decomposed::quantize_per_tensor.out");
  report("quantize_per_tensor.out/int8", measure([&] { err = quantize(ctx, q_args, 8); }), n, "element");
  if (err != rt::Error::Ok) semihost::exit(26);
  report("quantize/naive loop",
         measure([&] { naive_quantize(a, reinterpret_cast<int8_t*>(g_c), n, 1.0f / 0.05f, 3); }), n, "element");
  if (memcmp(g_c, g_d, static_cast<size_t>(n)) != 0) semihost::exit(27);
}

}  // namespace

int main() {
  ticks_start();
  constexpr uint32_t kSpin = 2000000;
  report("calibration", measure([] { spin(kSpin); }), 2 * kSpin, "instruction");
  report("empty", measure([] {}), 1, "call");
  // m x k x n: m a multiple of the 3-row block, n of the 2-vector width.
  bench_bmm<float, float>("bmm/float32 48x64x64", "bmm/float32 48x64x64 naive", rt::ScalarType::Float, 48, 64, 64);
  bench_bmm<float, float>("bmm/float32 48x256x64", "bmm/float32 48x256x64 naive", rt::ScalarType::Float, 48, 256,
                          64);
  bench_bmm<float, float>("bmm/float32 50x61x70", "bmm/float32 50x61x70 naive", rt::ScalarType::Float, 50, 61, 70);
  bench_bmm<int16_t, int32_t>("bmm/int16 48x64x64", "bmm/int16 48x64x64 naive", rt::ScalarType::Short, 48, 64, 64);
  bench_bmm<int8_t, int32_t>("bmm/int8 48x64x128", "bmm/int8 48x64x128 naive", rt::ScalarType::Char, 48, 64, 128);
  bench_split(96, 1600, 512);
  bench_elementwise(16384);
  return 0;
}
