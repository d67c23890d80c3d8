// external_memory.h — external data files a program holds in memory (ONNX
// Runtime's AddExternalInitializersFromFilesInMemory): while a scope is open
// on a thread, tensor_from_proto on that thread reads a tensor's external
// data from these buffers instead of files. Once files are given this way
// they are all the external data there is: a location not among them is an
// error (as in ONNX Runtime), one that is absolute or climbs above the
// model's directory never matches.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace spindle::io {

// File name (relative, as a model's external data `location` names it) ->
// the file's bytes, which the caller keeps alive while the scope is open.
using ExternalFiles = std::map<std::string, std::span<const uint8_t>>;

class ExternalFilesScope {
 public:
  // `files` null or empty: external data is read from files, as without a scope.
  explicit ExternalFilesScope(const ExternalFiles* files);
  ~ExternalFilesScope();
  ExternalFilesScope(const ExternalFilesScope&) = delete;
  ExternalFilesScope& operator=(const ExternalFilesScope&) = delete;

  // The files of the innermost scope open on this thread, or null.
  static const ExternalFiles* current();

 private:
  const ExternalFiles* previous_;
};

}  // namespace spindle::io
