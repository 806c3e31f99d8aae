#include "mnnpy/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mnnpy {

namespace {

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void throw_errno(const std::string& path, const std::string& verb) {
  const int e = errno;
  throw FileError(e, path, "cannot " + verb + " '" + path + "': " + std::strerror(e));
}

}  // namespace

MappedFile::~MappedFile() {
  if (data) ::munmap(const_cast<uint8_t*>(data), size);
}

std::shared_ptr<MappedFile> map_file(const std::string& path, bool writable, const char* verb) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // O_NONBLOCK: a FIFO must not hang
  if (fd < 0) throw_errno(path, "open");
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) throw_errno(path, "open");
  if (S_ISDIR(st.st_mode)) {
    throw FileError(EISDIR, path, std::string("cannot ") + verb + " '" + path + "': " + std::strerror(EISDIR));
  }
  if (!S_ISREG(st.st_mode)) throw IOError(std::string("cannot ") + verb + " '" + path + "': not a regular file");
  auto file = std::make_shared<MappedFile>();
  if (st.st_size == 0) return file;  // mmap refuses empty ranges
  const int protection = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* base = ::mmap(nullptr, (size_t)st.st_size, protection, MAP_PRIVATE, fd, 0);
  if (base == MAP_FAILED) throw_errno(path, "map");
  file->data = static_cast<const uint8_t*>(base);
  file->size = (size_t)st.st_size;
  return file;
}

}  // namespace mnnpy
