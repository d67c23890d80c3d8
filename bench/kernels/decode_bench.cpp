// decode_bench.cpp — what bounds a decode step: memory bandwidth, and the
// share of it a decode-shaped product reaches.
//
// stream: STREAM-like copy (b = a) and read (a reduction over a) of 256 MB
// arrays, split into 128 blocks over spindle's own intra-op pool at 1 and 2
// threads; GB/s counts the bytes read plus written (copy) or read (read).
// decode: the MatMul kernel (src/kernels/nn/gemm.cpp) with a constant B
// packed at creation, as a session runs it, on a LLaMA-style decoder's
// products (d 512, GQA 2 x 64 key-value width, SwiGLU 1408, vocabulary 8000)
// with M = 1, 4 and 16 rows; GB/s counts the packed weights read once per
// product; the calls cycle through 96 MB of packed copies so the weights
// come from memory. Best of 5 rounds of the median of 15 calls.
// int8: the one-row products through com.microsoft DynamicQuantizeMatMul
// (int8 weights, per-column scales); GB/s counts the int8 weights.
// nbits: the same products through com.microsoft MatMulNBits (4-bit
// weights, blocks of 32 with zero points, kept by the kernel), float
// activations (accuracy_level 0) and int8 ones (4); GB/s counts the bytes a
// call reads: the 4-bit codes and a 4-byte scale and zero point per block.
//
//   build/bench/kernels/bench_decode [--nbits | --int8 | --stream]
//   (--nbits, --int8: copy bandwidth and the MatMulNBits or the int8
//   products only; --stream: the bandwidth only, as
//   bench/models/decode_bandwidth.py reads it)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "best_of.h"
#include "nbits_node.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"
#include "spindle/threading_options.h"

namespace {

using spindle::Tensor;
using spindle::ThreadPool;

using spindle::bench::best_seconds;

void stream(ThreadPool* pool, int threads) {
  const size_t n = size_t{64} << 20;  // floats: 256 MB per array
  std::vector<uint64_t> a(n / 2, 0x3f8000003f800000ull), b(n / 2, 0);
  const int64_t blocks = 128, per = static_cast<int64_t>(a.size()) / blocks;
  const double copy = best_seconds([&] {
    spindle::parallel_for(pool, 0, blocks, 1, [&](int64_t b0, int64_t b1) {
      std::memcpy(b.data() + b0 * per, a.data() + b0 * per, static_cast<size_t>((b1 - b0) * per) * 8);
    });
  }, 3, 5);
  std::vector<uint64_t> partial(static_cast<size_t>(blocks));
  const double read = best_seconds([&] {
    spindle::parallel_for(pool, 0, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        uint64_t x[8] = {};
        const uint64_t* p = a.data() + blk * per;
        for (int64_t i = 0; i < per; i += 8)
          for (int j = 0; j < 8; ++j) x[j] ^= p[i + j];
        partial[static_cast<size_t>(blk)] = x[0] ^ x[1] ^ x[2] ^ x[3] ^ x[4] ^ x[5] ^ x[6] ^ x[7];
      }
    });
  }, 3, 5);
  const double bytes = static_cast<double>(a.size() * 8);
  std::printf("stream  threads %d  copy %6.2f GB/s  read %6.2f GB/s  (check %llx)\n", threads, 2 * bytes / copy / 1e9,
              bytes / read / 1e9, static_cast<unsigned long long>(partial[0]));
}

void decode(ThreadPool* pool, int threads, int64_t M, int64_t K, int64_t N) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> w(static_cast<size_t>(K * N)), x(static_cast<size_t>(M * K));
  for (auto& v : w) v = d(rng) * 0.02f;
  for (auto& v : x) v = d(rng);
  const Tensor B = Tensor::from_vector<float>({K, N}, w);
  spindle::kernels::NodeInfo info;
  info.op_type = "MatMul";
  info.opset = 13;
  info.num_inputs = 2;
  info.const_inputs = {nullptr, &B};
  const auto* factory = spindle::kernels::KernelRegistry::global().find("", "MatMul", 13);
  // Enough kernels (each with its own packed copy) to cycle through 96 MB of
  // weights, so every call reads its weights from memory as a decoder's
  // products do, not from the cache the previous call filled.
  const int64_t copies = std::max<int64_t>(1, (int64_t{96} << 20) / (K * N * 4));
  std::vector<std::unique_ptr<spindle::kernels::OpKernel>> kernels;
  for (int64_t i = 0; i < copies; ++i) kernels.push_back((*factory)(info));
  const Tensor A = Tensor::from_vector<float>({M, K}, x);
  const Tensor inputs[2] = {A, B};
  Tensor outputs[1];
  size_t next = 0;
  const double s = best_seconds([&] {
    spindle::kernels::KernelContext ctx(info, std::span<const Tensor>(inputs, 2), std::span<Tensor>(outputs, 1), pool);
    kernels[next++ % kernels.size()]->compute(ctx);
  });
  const auto& kernel = kernels[0];
  std::printf("decode  threads %d  M %2lld K %5lld N %5lld  %8.1f us  weights %6.2f GB/s\n", threads,
              static_cast<long long>(M), static_cast<long long>(K), static_cast<long long>(N), s * 1e6,
              static_cast<double>(kernel->packed_bytes()) / s / 1e9);
}

// The same products with int8 weights (per-column scales, symmetric)
// through com.microsoft DynamicQuantizeMatMul, as dynamically quantized
// decoders run them: A quantized to uint8 per call, then the int8 GEMM's one-row path.
void decode_q8(ThreadPool* pool, int threads, int64_t M, int64_t K, int64_t N) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> q(-127, 127);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<int8_t> w(static_cast<size_t>(K * N));
  std::vector<float> scales(static_cast<size_t>(N)), x(static_cast<size_t>(M * K));
  for (auto& v : w) v = static_cast<int8_t>(q(rng));
  for (auto& v : scales) v = 0.002f * (1.5f + d(rng));
  for (auto& v : x) v = d(rng);
  const Tensor B = Tensor::from_vector<int8_t>({K, N}, w);
  const Tensor S = Tensor::from_vector<float>({N}, scales);
  spindle::kernels::NodeInfo info;
  info.op_type = "DynamicQuantizeMatMul";
  info.domain = "com.microsoft";
  info.opset = 1;
  info.num_inputs = 3;
  info.const_inputs = {nullptr, &B, &S};
  const auto* factory = spindle::kernels::KernelRegistry::global().find("com.microsoft", "DynamicQuantizeMatMul", 1);
  const int64_t copies = std::max<int64_t>(1, (int64_t{96} << 20) / (K * N));
  std::vector<std::unique_ptr<spindle::kernels::OpKernel>> kernels;
  for (int64_t i = 0; i < copies; ++i) kernels.push_back((*factory)(info));
  const Tensor A = Tensor::from_vector<float>({M, K}, x);
  const Tensor inputs[3] = {A, B, S};
  Tensor outputs[1];
  size_t next = 0;
  const double s = best_seconds([&] {
    spindle::kernels::KernelContext ctx(info, std::span<const Tensor>(inputs, 3), std::span<Tensor>(outputs, 1), pool);
    kernels[next++ % kernels.size()]->compute(ctx);
  });
  std::printf("int8    threads %d  M %2lld K %5lld N %5lld  %8.1f us  weights %6.2f GB/s\n", threads,
              static_cast<long long>(M), static_cast<long long>(K), static_cast<long long>(N), s * 1e6,
              static_cast<double>(K * N) / s / 1e9);
}

void decode_nbits(ThreadPool* pool, int threads, int64_t M, int64_t K, int64_t N, int64_t level) {
  const int64_t bs = 32, kb = (K + bs - 1) / bs, blob = bs / 2;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<uint8_t> b(static_cast<size_t>(N * kb * blob)), zp(static_cast<size_t>(N * ((kb + 1) / 2)));
  std::vector<float> scales(static_cast<size_t>(N * kb)), x(static_cast<size_t>(M * K));
  for (auto& v : b) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : zp) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : scales) v = 0.002f * (1.5f + d(rng));
  for (auto& v : x) v = d(rng);
  const Tensor Bq = Tensor::from_vector<uint8_t>({N, kb, blob}, b);
  const Tensor S = Tensor::from_vector<float>({N * kb}, scales);
  const Tensor Z = Tensor::from_vector<uint8_t>({static_cast<int64_t>(zp.size())}, zp);
  const spindle::kernels::NodeInfo info = spindle::bench::nbits_node(K, N, bs, level, Bq, S, Z);
  const auto* factory = spindle::kernels::KernelRegistry::global().find("com.microsoft", "MatMulNBits", 1);
  const double bytes = static_cast<double>(N * kb * (blob + 8));
  const int64_t copies = std::max<int64_t>(1, static_cast<int64_t>((96 << 20) / bytes));
  std::vector<std::unique_ptr<spindle::kernels::OpKernel>> kernels;
  for (int64_t i = 0; i < copies; ++i) kernels.push_back((*factory)(info));
  const Tensor A = Tensor::from_vector<float>({M, K}, x);
  const Tensor inputs[4] = {A, Tensor(), Tensor(), Tensor()};
  Tensor outputs[1];
  size_t next = 0;
  const double s = best_seconds([&] {
    spindle::kernels::KernelContext ctx(info, std::span<const Tensor>(inputs, 4), std::span<Tensor>(outputs, 1), pool);
    kernels[next++ % kernels.size()]->compute(ctx);
  });
  std::printf("nbits   threads %d  M %2lld K %5lld N %5lld  level %lld  %8.1f us  weights %6.2f GB/s\n", threads,
              static_cast<long long>(M), static_cast<long long>(K), static_cast<long long>(N),
              static_cast<long long>(level), s * 1e6, bytes / s / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  const bool nbits_only = argc > 1 && std::strcmp(argv[1], "--nbits") == 0;
  const bool int8_only = argc > 1 && std::strcmp(argv[1], "--int8") == 0;
  for (int threads : {1, 2}) {
    auto pool = ThreadPool::create(spindle::ThreadingOptions{.num_threads = threads}).value();
    stream(pool.get(), threads);
  }
  if (argc > 1 && std::strcmp(argv[1], "--stream") == 0) return 0;
  const int64_t shapes[][2] = {{512, 512}, {512, 128}, {512, 1408}, {1408, 512}, {512, 8000}};
  for (int threads : {1, 2}) {
    auto pool = ThreadPool::create(spindle::ThreadingOptions{.num_threads = threads}).value();
    if (!nbits_only && !int8_only)
      for (int64_t M : {1, 4, 16})
        for (const auto& kn : shapes) decode(pool.get(), threads, M, kn[0], kn[1]);
    if (!nbits_only)
      for (const auto& kn : shapes) decode_q8(pool.get(), threads, 1, kn[0], kn[1]);
    if (int8_only) continue;
    for (int64_t level : {0, 4})
      for (const auto& kn : shapes) decode_nbits(pool.get(), threads, 1, kn[0], kn[1], level);
  }
  return 0;
}
