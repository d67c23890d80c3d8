// nbits_bench.cpp — com.microsoft MatMulNBits (4-bit weights, blocks of 32
// with zero points, kept by the kernel as a session keeps them) against the
// float MatMul kernel with the same weights dequantized and packed at
// creation, on a LLaMA-style decoder's products (d 512, GQA 2 x 64
// key-value width, SwiGLU 1408, vocabulary 8000): M = 1 (a decode step), 32
// and 128 rows (prefill), at 1 and 2 threads. Prints the time of each
// kernel (best of 5 rounds of the median of 15 calls), the ratio
// MatMulNBits / MatMul, and the MatMulNBits rate in GFLOP/s.
//
// --accuracy-level 4 sets the node's accuracy_level (int8 activations);
// --rows M1,M2,... the row counts (default 1,32,128); --decode runs M = 1
// only.
//
//   build/bench/kernels/bench_nbits [--block-size 32] [--accuracy-level 4] [--rows 1,32,128] [--decode]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

double time_kernel(const spindle::kernels::NodeInfo& info, const spindle::kernels::OpKernel& kernel,
                   const std::vector<Tensor>& inputs, ThreadPool* pool) {
  Tensor outputs[1];
  return best_seconds([&] {
    spindle::kernels::KernelContext ctx(info, std::span<const Tensor>(inputs.data(), inputs.size()),
                                        std::span<Tensor>(outputs, 1), pool);
    kernel.compute(ctx);
  });
}

void product(ThreadPool* pool, int threads, int64_t M, int64_t K, int64_t N, int64_t bs, int64_t level) {
  std::mt19937 rng(static_cast<uint32_t>(K * 7 + N));
  std::uniform_int_distribution<int> code(0, 15);
  std::uniform_real_distribution<float> unit(-1, 1);
  const int64_t k_blocks = (K + bs - 1) / bs, blob = bs / 2, zp_row = (k_blocks + 1) / 2;
  std::vector<uint8_t> b(static_cast<size_t>(N * k_blocks * blob)), zp(static_cast<size_t>(N * zp_row));
  std::vector<float> scales(static_cast<size_t>(N * k_blocks)), w(static_cast<size_t>(K * N)),
      x(static_cast<size_t>(M * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      const float s = 0.002f * (1.0f + unit(rng) * 0.5f);
      const int z = code(rng);
      scales[static_cast<size_t>(n * k_blocks + kb)] = s;
      zp[static_cast<size_t>(n * zp_row + kb / 2)] |= static_cast<uint8_t>(kb % 2 == 0 ? z : z << 4);
      for (int64_t j = 0; j < bs; ++j) {
        const int q = code(rng), k = static_cast<int>(kb * bs + j);
        b[static_cast<size_t>((n * k_blocks + kb) * blob + j / 2)] |= static_cast<uint8_t>(j % 2 == 0 ? q : q << 4);
        if (k < K) w[static_cast<size_t>(k * N + n)] = static_cast<float>(q - z) * s;
      }
    }
  for (auto& v : x) v = unit(rng);
  const Tensor A = Tensor::from_vector<float>({M, K}, x);

  const Tensor Bq = Tensor::from_vector<uint8_t>({N, k_blocks, blob}, b);
  const Tensor S = Tensor::from_vector<float>({N * k_blocks}, scales);
  const Tensor Z = Tensor::from_vector<uint8_t>({N * zp_row}, zp);
  const spindle::kernels::NodeInfo q_info = spindle::bench::nbits_node(K, N, bs, level, Bq, S, Z);
  const auto q_kernel = (*spindle::kernels::KernelRegistry::global().find("com.microsoft", "MatMulNBits", 1))(q_info);
  const double tq = time_kernel(q_info, *q_kernel, {A, Tensor(), Tensor(), Tensor()}, pool);

  const Tensor B = Tensor::from_vector<float>({K, N}, w);
  spindle::kernels::NodeInfo f_info;
  f_info.op_type = "MatMul";
  f_info.opset = 13;
  f_info.num_inputs = 2;
  f_info.const_inputs = {nullptr, &B};
  const auto f_kernel = (*spindle::kernels::KernelRegistry::global().find("", "MatMul", 13))(f_info);
  const double tf = time_kernel(f_info, *f_kernel, {A, B}, pool);

  std::printf("threads %d  M %3lld K %5lld N %5lld  nbits %8.1f us  float %8.1f us  ratio %5.2f  nbits %6.1f GFLOP/s\n",
              threads, static_cast<long long>(M), static_cast<long long>(K), static_cast<long long>(N), tq * 1e6,
              tf * 1e6, tq / tf, 2.0 * static_cast<double>(M * K * N) / tq / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t bs = 32, level = 0;
  bool decode = false;
  std::vector<int64_t> rows = {1, 32, 128};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--decode") == 0) decode = true;
    if (i + 1 == argc) break;
    if (std::strcmp(argv[i], "--block-size") == 0) bs = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--accuracy-level") == 0) level = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--rows") == 0) {
      rows.clear();
      for (const char* p = argv[i + 1]; *p;) {
        char* end = nullptr;
        rows.push_back(std::strtoll(p, &end, 10));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) break;
      }
    }
  }
  const int64_t shapes[][2] = {{512, 512}, {512, 128}, {512, 1408}, {1408, 512}, {512, 8000}};
  for (int threads : {1, 2}) {
    auto pool = ThreadPool::create(spindle::ThreadingOptions{.num_threads = threads}).value();
    for (int64_t M : rows) {
      if (decode && M > 1) break;
      for (const auto& kn : shapes) product(pool.get(), threads, M, kn[0], kn[1], bs, level);
    }
  }
  return 0;
}
