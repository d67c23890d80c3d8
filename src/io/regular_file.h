// regular_file.h — the one way spindle opens a file it reads: the model, an
// options file, a .npy or .pb tensor file, external data.
//
// The file is opened first and the opened descriptor is checked (fstat, after
// symlinks were followed by open), so what is checked is what is read: a
// regular file of at most `max_bytes` bytes. A character device (/dev/zero,
// /dev/urandom), a FIFO, a socket or a directory is refused before a byte is
// read, and so is a file over the cap, so no input can make spindle read
// without end. Opening never blocks on a FIFO without a writer.
//
// Reads are exact: read_at() fills all `n` bytes or fails (a file that
// shrank while being read), so a file's contents never exceed its checked size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "spindle/status.h"

namespace spindle::io {

// Size caps of the files spindle reads whole.
// A model (.onnx) or a .pb tensor file: protobuf parses at most 2 GiB - 1.
inline constexpr uint64_t kMaxProtoFileBytes = (uint64_t{1} << 31) - 1;
// A JSON options file (spindle run|bench --options).
inline constexpr uint64_t kMaxOptionsFileBytes = uint64_t{16} << 20;
// No cap but the file's own size (.npy and external data, whose headers say
// how many bytes to read, checked against the size).
inline constexpr uint64_t kNoSizeCap = UINT64_MAX;

class RegularFile {
 public:
  // Opens `path` for reading. `what` names the file in messages ("model
  // file", "options file"); `max_bytes` caps its size. Errors:
  //   kNotFound          the path does not exist or cannot be opened
  //   kInvalidArgument   it is not a regular file (device, FIFO, directory...)
  //   kResourceExhausted it is larger than max_bytes
  static Result<RegularFile> open(const std::filesystem::path& path, std::string_view what,
                                  uint64_t max_bytes = kNoSizeCap);

  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  // The size checked at open().
  uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  // Reads exactly n bytes at `offset` into dst.
  Status read_at(uint64_t offset, void* dst, size_t n) const;
  // The whole file (size() bytes).
  Result<std::string> read_all() const;

 private:
  RegularFile(int fd, uint64_t size, std::filesystem::path path, std::string what)
      : fd_(fd), size_(size), path_(std::move(path)), what_(std::move(what)) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::filesystem::path path_;
  std::string what_;
};

// RegularFile::open(path, what, max_bytes) and read_all().
Result<std::string> read_whole_file(const std::filesystem::path& path, std::string_view what, uint64_t max_bytes);

// "2 GiB", "16 MiB", "1234 bytes": a byte count for messages.
std::string describe_bytes(uint64_t bytes);

}  // namespace spindle::io
