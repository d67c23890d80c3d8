// memory_files_test.cpp — AddExternalInitializersFromFilesInMemory: a model's
// external data read from the program's buffers, on make_models.py's
// init.onnx (y = x * w + b; w's 12 bytes in the external file init.weights,
// b = [0.5, 0.5, 0.5]):
// - a model given as bytes (no directory to read files from) runs with
//   init.weights in memory; the buffer may be overwritten once the session
//   exists (results unchanged);
// - a model given as a path takes the buffer in place of the file beside it;
// - a buffer shorter than the data refuses the session; so does a file name
//   the model does not use, from bytes or from a path (files given in memory
//   are all the external data there is: the file beside the model is not read);
// - the C++ wrapper takes the same file as vectors, and refuses vectors of
//   different lengths;
// - NULL arrays are refused by the call.
// Every expectation is ONNX Runtime's: the program also runs on its library
// (ctest capi_memory_files_on_onnxruntime).
//
//   memory_files_test INIT_MODEL [--onnxruntime]
#include <onnxruntime_cxx_api.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "checks.h"
#include "cxx_helpers.h"

namespace {
int failures = 0;
const OrtApi* ort = nullptr;

std::vector<float> run(Ort::Session& session) { return capi_test::run_x_to_y(session, {1, -1, 2}, {3}); }

using capi_test::same_bits;

// Options holding one file in memory.
Ort::SessionOptions with_file(const char* name, std::vector<float>& data, size_t bytes) {
  Ort::SessionOptions options;
  const char* names[] = {name};
  char* buffers[] = {reinterpret_cast<char*>(data.data())};
  const size_t lengths[] = {bytes};
  CHECK(ort->AddExternalInitializersFromFilesInMemory(options, names, buffers, lengths, 1));
  return options;
}

bool refused(Ort::Env& env, const std::string& bytes, Ort::SessionOptions& options) {
  try {
    Ort::Session session(env, bytes.data(), bytes.size(), options);
    return false;
  } catch (const Ort::Exception& e) {
    std::printf("  refused: %s\n", e.what());
    return true;
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: memory_files_test INIT_MODEL [--onnxruntime]\n");
    return 2;
  }
  ort = &Ort::GetApi();
  Ort::Env env(ORT_LOGGING_LEVEL_FATAL, "memory_files");
  const char* model = argv[1];
  const bool on_onnxruntime = std::strcmp(argv[argc - 1], "--onnxruntime") == 0;
  std::ifstream in(model, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT(!bytes.empty());
  std::vector<float> w = {4, 5, 6};
  {  // From bytes, at 1 and 2 threads; the buffer overwritten after creation.
    for (int threads : {1, 2}) {
      std::vector<float> copy = w;
      Ort::SessionOptions options = with_file("init.weights", copy, 12);
      options.SetIntraOpNumThreads(threads);
      Ort::Session session(env, bytes.data(), bytes.size(), options);
      copy.assign(3, 100.f);
      EXPECT(same_bits(run(session), {4.5f, -4.5f, 12.5f}));
    }
  }
  {  // From the path: the buffer wins over the file beside the model.
    Ort::SessionOptions options = with_file("init.weights", w, 12);
    Ort::Session session(env, model, options);
    EXPECT(same_bits(run(session), {4.5f, -4.5f, 12.5f}));
  }
  {  // Through the C++ wrapper's vectors.
    std::vector<float> copy = w;
    Ort::SessionOptions options;
    options.AddExternalInitializersFromFilesInMemory({"init.weights"}, {reinterpret_cast<char*>(copy.data())}, {12});
    Ort::Session session(env, bytes.data(), bytes.size(), options);
    EXPECT(same_bits(run(session), {4.5f, -4.5f, 12.5f}));
    bool thrown = false;
    try {
      options.AddExternalInitializersFromFilesInMemory({"init.weights"}, {}, {12});
    } catch (const Ort::Exception& e) {
      thrown = e.GetOrtErrorCode() == ORT_INVALID_ARGUMENT;
    }
    EXPECT(thrown);
  }
  {  // Too short.
    Ort::SessionOptions options = with_file("init.weights", w, 8);
    EXPECT(refused(env, bytes, options));
  }
  {  // Another file name: the model's file is nowhere.
    Ort::SessionOptions options = with_file("other.weights", w, 12);
    EXPECT(refused(env, bytes, options));
  }
  {  // Another file name, the model given as a path: files given in memory
     // are all the external data there is (the file beside it is not read).
    Ort::SessionOptions options = with_file("other.weights", w, 12);
    bool created = true;
    try {
      Ort::Session session(env, model, options);
    } catch (const Ort::Exception& e) {
      std::printf("  refused: %s\n", e.what());
      created = false;
    }
    EXPECT(!created);
  }
  if (!on_onnxruntime) {  // NULL arrays (ONNX Runtime does not check them).
    Ort::SessionOptions options;
    const size_t lengths[] = {12};
    OrtStatus* status = ort->AddExternalInitializersFromFilesInMemory(options, nullptr, nullptr, lengths, 1);
    EXPECT(status != nullptr);
    if (status) ort->ReleaseStatus(status);
  }
  return CHECKS_DONE("memory_files_test");
}
