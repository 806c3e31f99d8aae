// Files read by mapping them into memory: the model readers take constants from the mapping
// (mnnpy graph files) or copy each tensor out of it once (ONNX), never reading the file twice.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "mnnpy/tensor.h"

namespace mnnpy {

// An operating-system error on a path; the bindings raise it as OSError(errno, strerror, path)
// so that Python picks the matching subclass (FileNotFoundError, PermissionError ...).
struct FileError : IOError {
  FileError(int error_number, std::string path, const std::string& message)
      : IOError(message), error_number(error_number), path(std::move(path)) {}
  int error_number;
  std::string path;
};

// A whole regular file mapped MAP_PRIVATE, unmapped when the last holder lets go.
struct MappedFile {
  const uint8_t* data = nullptr;  // null for an empty file
  size_t size = 0;
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
};

// Maps `path`. `writable`: pages may be written (copy on write, never reaching the file), for
// mappings that back constants; otherwise read-only. Throws FileError when the file cannot be
// opened or mapped or is a directory, IOError when it is not a regular file (a FIFO, a device).
// `verb` words the messages: "cannot <verb> '<path>': ...".
std::shared_ptr<MappedFile> map_file(const std::string& path, bool writable, const char* verb = "load");

}  // namespace mnnpy
