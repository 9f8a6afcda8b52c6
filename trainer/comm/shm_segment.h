#pragma once
// A POSIX shared-memory segment (shm_open + mmap), mapped read-write and pre-faulted.
//
// Ownership: owns the mapping and unmaps it when destroyed. The creator also owns the name:
// it unlinks it in unlink() or, at the latest, when destroyed; openers never unlink. Once
// every rank has mapped the segment the creator should unlink() so nothing is left in /dev/shm
// if a process dies. Thread-safety: the object is immutable after creation; what callers put in
// the memory is their business. Failure: create/open return errno errors naming the segment;
// create() reserves the memory up front (posix_fallocate) so a full /dev/shm fails here with
// ENOSPC instead of SIGBUS on first touch.

#include <cstddef>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::comm {

class ShmSegment {
 public:
  // Creates a new segment `name` ("/something") of `bytes` zeroed bytes; fails if it exists.
  static core::Result<std::unique_ptr<ShmSegment>> create(const std::string& name, size_t bytes);
  // Maps an existing segment; fails unless it is exactly `bytes` long.
  static core::Result<std::unique_ptr<ShmSegment>> open(const std::string& name, size_t bytes);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Removes the name (creator only; idempotent). The mapping stays valid.
  core::Status unlink();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  ShmSegment(std::string name, void* data, size_t size, bool owns_name)
      : name_(std::move(name)), data_(data), size_(size), owns_name_(owns_name) {}
  static core::Result<void*> map(int fd, const std::string& name, size_t bytes);

  std::string name_;
  void* data_;
  size_t size_;
  bool owns_name_;  // creator, not yet unlinked
};

}  // namespace ringmaster::trainer::comm
