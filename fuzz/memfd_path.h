#pragma once
// The trainer's readers take a path: the fuzz input goes into an in-memory file (memfd, no
// disk) that they open as /proc/self/fd/N. One file per process, rewritten for every input.

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ringmaster::fuzz {

inline std::string writeToMemfd(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("rm-fuzz-input", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0) {
    std::perror("fuzz: memfd_create/ftruncate");
    std::abort();
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) {
      std::perror("fuzz: pwrite");
      std::abort();
    }
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace ringmaster::fuzz
