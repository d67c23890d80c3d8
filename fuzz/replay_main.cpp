// replay_main.cpp — a main() for the fuzz targets without libFuzzer: runs
// LLVMFuzzerTestOneInput once on every file named on the command line (a
// directory means every file in it, sorted), so that corpora and findings
// can be replayed by any compiler and in any build (e.g. gcc with ASan).
// Prints how many inputs ran; a finding aborts as it would under libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(argv[i]))
        if (e.is_regular_file()) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.emplace_back(argv[i]);
    }
  }
  for (const fs::path& p : files) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot open %s\n", argv[0], p.c_str());
      return 2;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::fprintf(stderr, "replay: %s\n", p.c_str());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("%s: %zu inputs replayed\n", argv[0], files.size());
  return 0;
}
