#include "local/store/persistence.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace ringmaster::local {
namespace {

core::Status writeAll(int fd, std::string_view data, const std::filesystem::path& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return core::errnoError("write " + path.string(), errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return core::Status::Ok();
}

}  // namespace

core::Status writeFileAtomic(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return core::errnoError("open " + tmp.string(), errno);
  core::Status st = writeAll(fd, content, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = core::errnoError("fsync " + tmp.string(), errno);
  ::close(fd);
  if (!st.ok()) return st;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return core::errnoError("rename " + tmp.string() + " -> " + path.string(), errno);
  }
  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return core::errnoError("open directory " + dir.string(), errno);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0) return core::errnoError("fsync directory " + dir.string(), err);
  return core::Status::Ok();
}

core::Status readLines(const std::filesystem::path& path,
                       const std::function<core::Status(std::string_view)>& line,
                       size_t* complete_bytes) {
  *complete_bytes = 0;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return core::Status::Ok();
    return core::errnoError("open " + path.string(), errno);
  }
  std::string data;
  std::vector<char> buf(1 << 20);
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return core::errnoError("read " + path.string(), err);
    }
    if (n == 0) break;
    data.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) break;  // torn final record
    RM_RETURN_IF_ERROR_CTX(line(std::string_view(data).substr(pos, nl - pos)),
                           path.string() + " at byte " + std::to_string(pos));
    pos = nl + 1;
  }
  *complete_bytes = pos;
  return core::Status::Ok();
}

AppendLog::~AppendLog() { close(); }

core::Status AppendLog::open(const std::filesystem::path& path, size_t keep_bytes) {
  close();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return core::errnoError("open " + path.string(), errno);
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size > static_cast<off_t>(keep_bytes) &&
      ::ftruncate(fd, static_cast<off_t>(keep_bytes)) != 0) {
    int err = errno;
    ::close(fd);
    return core::errnoError("truncate " + path.string(), err);
  }
  fd_ = fd;
  path_ = path;
  return core::Status::Ok();
}

core::Status AppendLog::append(std::string_view record, bool sync) {
  if (fd_ < 0) return core::internalError("append log is not open");
  std::string line(record);
  line.push_back('\n');
  RM_RETURN_IF_ERROR(writeAll(fd_, line, path_));
  if (sync && ::fdatasync(fd_) != 0) return core::errnoError("fdatasync " + path_.string(), errno);
  return core::Status::Ok();
}

core::Status AppendLog::truncate() {
  if (fd_ < 0) return core::Status::Ok();
  if (::ftruncate(fd_, 0) != 0) return core::errnoError("truncate " + path_.string(), errno);
  if (::fsync(fd_) != 0) return core::errnoError("fsync " + path_.string(), errno);
  return core::Status::Ok();
}

void AppendLog::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace ringmaster::local
