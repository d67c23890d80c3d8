// capi_compare — runs the PP-OCR direction classifier through spindle's C++
// API on capi_test.c's fixed input and checks that the outputs capi_test
// wrote through the C API (libonnxruntime.so.1) are bitwise the same.
//
//   capi_compare CLS_MODEL C_API_OUTPUT
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "spindle/session.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: capi_compare CLS_MODEL C_API_OUTPUT\n");
    return 2;
  }
  std::vector<float> x(1 * 3 * 48 * 192);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((static_cast<int>(i) * 37) % 101) / 50.0f - 1.0f;
  spindle::SessionOptions opts;
  opts.intra_op_num_threads = 1;  // results do not depend on the thread count
  auto session = spindle::InferenceSession::create(argv[1], opts);
  auto out = session->run({{session->inputs()[0].name, spindle::Tensor::from_vector<float>({1, 3, 48, 192}, x)}});
  auto expected = out[0].to_vector<float>();
  std::ifstream f(argv[2], std::ios::binary);
  std::vector<float> got(expected.size() + 1);
  f.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size() * sizeof(float)));
  const size_t n = static_cast<size_t>(f.gcount()) / sizeof(float);
  if (n != expected.size()) {
    std::fprintf(stderr, "%s holds %zu floats; spindle's output has %zu\n", argv[2], n, expected.size());
    return 1;
  }
  if (std::memcmp(got.data(), expected.data(), n * sizeof(float)) != 0) {
    for (size_t i = 0; i < n; ++i)
      std::fprintf(stderr, "  [%zu] C API %.9g, C++ API %.9g\n", i, static_cast<double>(got[i]), static_cast<double>(expected[i]));
    std::fprintf(stderr, "the C API's outputs differ from spindle's C++ API\n");
    return 1;
  }
  std::printf("C API outputs are bitwise spindle's (%zu floats)\n", n);
  return 0;
}
