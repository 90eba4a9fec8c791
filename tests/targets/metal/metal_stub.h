// Stand-ins for the Metal Shading Language's qualifiers, types and library, so
// that generated MSL can be syntax-checked by a C++17 compiler (g++ -fsyntax-only).
// Attributes such as [[buffer(0)]] are unknown to g++ and only warned about.
#pragma once
#include <cmath>
#include <cstdint>
#define kernel
#define device
#define threadgroup
#define constant const
#define thread
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef float half;
struct uint3 { uint v[3]; uint operator[](uint i) const { return v[i]; } };
namespace metal {
enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }
enum memory_order { memory_order_relaxed, memory_order_seq_cst };
enum thread_scope { thread_scope_threadgroup, thread_scope_device };
inline void threadgroup_barrier(mem_flags) {}
inline void simdgroup_barrier(mem_flags) {}
inline void atomic_thread_fence(mem_flags, memory_order, thread_scope = thread_scope_device) {}
template <class T, class U> T as_type(U) { return T(); }
#define GPUX_MSL_FN(name) template <class T, class... A> T name(T x, A...) { return x; }
GPUX_MSL_FN(sin) GPUX_MSL_FN(cos) GPUX_MSL_FN(tan) GPUX_MSL_FN(asin) GPUX_MSL_FN(acos)
GPUX_MSL_FN(atan) GPUX_MSL_FN(sinh) GPUX_MSL_FN(cosh) GPUX_MSL_FN(tanh) GPUX_MSL_FN(asinh)
GPUX_MSL_FN(acosh) GPUX_MSL_FN(atanh) GPUX_MSL_FN(exp) GPUX_MSL_FN(exp2) GPUX_MSL_FN(log)
GPUX_MSL_FN(log2) GPUX_MSL_FN(log10) GPUX_MSL_FN(sqrt) GPUX_MSL_FN(fabs) GPUX_MSL_FN(floor)
GPUX_MSL_FN(ceil) GPUX_MSL_FN(trunc) GPUX_MSL_FN(rint) GPUX_MSL_FN(round) GPUX_MSL_FN(pow)
GPUX_MSL_FN(atan2) GPUX_MSL_FN(fmod) GPUX_MSL_FN(copysign) GPUX_MSL_FN(fmin) GPUX_MSL_FN(fmax)
GPUX_MSL_FN(fma) GPUX_MSL_FN(min) GPUX_MSL_FN(max) GPUX_MSL_FN(abs) GPUX_MSL_FN(popcount)
GPUX_MSL_FN(clz) GPUX_MSL_FN(ctz) GPUX_MSL_FN(mulhi)
template <class T> bool isinf(T) { return false; }
template <class T> bool isnan(T) { return false; }
GPUX_MSL_FN(simd_shuffle) GPUX_MSL_FN(simd_shuffle_up) GPUX_MSL_FN(simd_shuffle_down)
GPUX_MSL_FN(simd_shuffle_xor) GPUX_MSL_FN(simd_sum) GPUX_MSL_FN(simd_product)
GPUX_MSL_FN(simd_min) GPUX_MSL_FN(simd_max) GPUX_MSL_FN(simd_and) GPUX_MSL_FN(simd_or)
GPUX_MSL_FN(simd_xor)
inline bool simd_all(bool b) { return b; }
inline bool simd_any(bool b) { return b; }
struct simd_vote { typedef uint64_t vote_t; explicit operator vote_t() const { return 0; } };
inline simd_vote simd_ballot(bool) { return simd_vote(); }
}  // namespace metal
// atomics (32-bit), as declared by <metal_atomic>
namespace metal {
struct atomic_int { int v; };
struct atomic_uint { uint v; };
inline uint atomic_load_explicit(atomic_uint* a, memory_order) { return a->v; }
inline void atomic_store_explicit(atomic_uint* a, uint x, memory_order) { a->v = x; }
#define GPUX_MSL_ATOMIC(name) \
  inline int name(atomic_int* a, int x, memory_order) { return a->v + x; } \
  inline uint name(atomic_uint* a, uint x, memory_order) { return a->v + x; }
GPUX_MSL_ATOMIC(atomic_fetch_add_explicit) GPUX_MSL_ATOMIC(atomic_fetch_sub_explicit)
GPUX_MSL_ATOMIC(atomic_fetch_and_explicit) GPUX_MSL_ATOMIC(atomic_fetch_or_explicit)
GPUX_MSL_ATOMIC(atomic_fetch_xor_explicit) GPUX_MSL_ATOMIC(atomic_fetch_min_explicit)
GPUX_MSL_ATOMIC(atomic_fetch_max_explicit) GPUX_MSL_ATOMIC(atomic_exchange_explicit)
inline bool atomic_compare_exchange_weak_explicit(atomic_uint* a, uint* e, uint n, memory_order,
                                                  memory_order) { return a->v == *e && n == n; }
inline uint reverse_bits(uint x) { return x; }
inline ulong reverse_bits(ulong x) { return x; }
}  // namespace metal
