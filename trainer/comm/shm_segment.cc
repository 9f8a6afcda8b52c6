#include "trainer/comm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer::comm {
namespace {

// Closes an fd at scope exit; the mapping does not need it.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

core::Result<void*> ShmSegment::map(int fd, const std::string& name, size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return core::errnoError("mmap " + name, errno);
  return p;
}

core::Result<std::unique_ptr<ShmSegment>> ShmSegment::create(const std::string& name,
                                                             size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return core::errnoError("shm_open(create) " + name, errno);
  FdCloser closer{fd};
  auto fail = [&](core::Status s) {
    ::shm_unlink(name.c_str());
    return s;
  };
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    return fail(core::errnoError("ftruncate " + name + " to " + std::to_string(bytes), errno));
  }
  // tmpfs allocates lazily: reserve now so a small /dev/shm (containers) fails here.
  if (const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
    return fail(core::errnoError(
        "posix_fallocate " + name + " (" + std::to_string(bytes) + " bytes in /dev/shm)", rc));
  }
  core::Result<void*> data = map(fd, name, bytes);
  if (!data.ok()) return fail(data.status());
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, *data, bytes, /*owns_name=*/true));
}

core::Result<std::unique_ptr<ShmSegment>> ShmSegment::open(const std::string& name, size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return core::errnoError("shm_open " + name, errno);
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return core::errnoError("fstat " + name, errno);
  if (static_cast<size_t>(st.st_size) != bytes) {
    return core::invalidArgument("shm segment " + name + " has " + std::to_string(st.st_size) +
                                 " bytes, expected " + std::to_string(bytes));
  }
  RM_ASSIGN_OR_RETURN(void* data, map(fd, name, bytes));
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, data, bytes, /*owns_name=*/false));
}

core::Status ShmSegment::unlink() {
  if (!owns_name_) return core::Status::Ok();
  owns_name_ = false;
  if (::shm_unlink(name_.c_str()) != 0 && errno != ENOENT) {
    return core::errnoError("shm_unlink " + name_, errno);
  }
  return core::Status::Ok();
}

ShmSegment::~ShmSegment() {
  if (core::Status s = unlink(); !s.ok()) {
    RM_LOG(WARN, COMM) << s.message();
  }
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace ringmaster::trainer::comm
