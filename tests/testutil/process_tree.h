#pragma once
// What a process and its descendants are doing, read from /proc: for a test that gives up on a
// process, so that its failure message says where the process was stuck (a stopped process,
// a thread asleep in a lock or a read) instead of only that it timed out.

#include <sys/types.h>

#include <string>

namespace ringmaster::testutil {

// One line per process of the tree rooted at `root` (pid, parent, state, name, kernel wait
// channel), then one per thread of each (tid, state, wait channel). "" when root is gone.
std::string describeProcessTree(pid_t root);

}  // namespace ringmaster::testutil
