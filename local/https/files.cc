#include "local/https/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

namespace ringmaster::local {

core::Result<std::string> readFile(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return core::notFound(path.string() + ": no such file");
    return core::errnoError("open " + path.string(), errno);
  }
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return core::errnoError("read " + path.string(), err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

core::Status writeFileAtomic(const std::filesystem::path& path, std::string_view content,
                             unsigned mode) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device()());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0777);
  if (fd < 0) return core::errnoError("create " + tmp.string(), errno);
  auto fail = [&](std::string what) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return core::errnoError(what + " " + tmp.string(), err);
  };
  if (::fchmod(fd, mode & 0777) != 0) return fail("chmod");
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write");
    content.remove_prefix(static_cast<size_t>(n));
  }
  if (::fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return core::errnoError("close " + tmp.string(), err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return core::errnoError("rename to " + path.string(), err);
  }
  return core::Status::Ok();
}

core::Status ensureDirectory(const std::filesystem::path& dir, unsigned mode) {
  if (dir.empty()) return core::Status::Ok();
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return core::Status::Ok();
    return core::invalidArgument(dir.string() + ": exists and is not a directory");
  }
  if (dir.has_parent_path() && dir.parent_path() != dir) {
    RM_RETURN_IF_ERROR(ensureDirectory(dir.parent_path(), mode));
  }
  if (::mkdir(dir.c_str(), mode & 0777) != 0 && errno != EEXIST) {
    return core::errnoError("mkdir " + dir.string(), errno);
  }
  return core::Status::Ok();
}

}  // namespace ringmaster::local
