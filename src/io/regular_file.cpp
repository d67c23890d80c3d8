// regular_file.cpp — see regular_file.h.
#include "io/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace spindle::io {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string describe_bytes(uint64_t bytes) {
  constexpr uint64_t kGiB = uint64_t{1} << 30, kMiB = uint64_t{1} << 20;
  if (bytes + 1 >= kGiB && (bytes + 1) % kGiB == 0) return fmt::format("{} GiB - 1 byte", (bytes + 1) / kGiB);
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  return fmt::format("{} bytes", bytes);
}

Result<RegularFile> RegularFile::open(const std::filesystem::path& path, std::string_view what, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever;
  // it does not change how a regular file reads.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return not_found(fmt::format("{} {} does not exist", what, path.string()));
    return not_found(fmt::format("{} {} cannot be opened: {}", what, path.string(), std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return not_found(fmt::format("{} {} cannot be examined: {}", what, path.string(), std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(fmt::format("{} {} is {}, expected a regular file", what, path.string(), file_kind(st.st_mode)));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    return resource_exhausted(fmt::format("{} {} holds {} bytes, more than the limit of {}", what, path.string(), size,
                                          describe_bytes(max_bytes)));
  }
  return RegularFile(fd, size, path, std::string(what));
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), path_(std::move(other.path_)), what_(std::move(other.what_)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    path_ = std::move(other.path_);
    what_ = std::move(other.what_);
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RegularFile::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset)
    return invalid_argument(fmt::format("{} {}: reading {} bytes at offset {} goes past its end ({} bytes)", what_,
                                        path_.string(), n, offset, size_));
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    // At most 1 GiB per call (Linux reads at most 2 GiB - 4 KiB at once).
    const size_t chunk = std::min<size_t>(n - done, size_t{1} << 30);
    const ssize_t got = ::pread(fd_, out + done, chunk, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return runtime_error(fmt::format("{} {}: reading failed: {}", what_, path_.string(), std::strerror(errno)));
    }
    if (got == 0)
      return invalid_argument(fmt::format("{} {}: the file ended after {} bytes, expected {} (did it change while "
                                          "being read?)",
                                          what_, path_.string(), offset + done, offset + n));
    done += static_cast<size_t>(got);
  }
  return Status::ok();
}

Result<std::string> RegularFile::read_all() const {
  std::string bytes(static_cast<size_t>(size_), '\0');
  SPINDLE_RETURN_IF_ERROR(read_at(0, bytes.data(), bytes.size()));
  return bytes;
}

Result<std::string> read_whole_file(const std::filesystem::path& path, std::string_view what, uint64_t max_bytes) {
  SPINDLE_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path, what, max_bytes));
  return file.read_all();
}

}  // namespace spindle::io
