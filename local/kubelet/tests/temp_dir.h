#pragma once
// A fresh directory under /tmp for a kubelet unit test, removed with everything in it.

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ringmaster::local::kubelet::test_support {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/rm-kubelet-test-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ringmaster::local::kubelet::test_support
