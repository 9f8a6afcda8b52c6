// IDX data set files (plain or gzip), as the trainer reads Fashion-MNIST: trainer/data/idx.h.
#include "fuzz/memfd_path.h"
#include "trainer/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto array = ringmaster::trainer::data::readIdx(ringmaster::fuzz::writeToMemfd(data, size));
  if (array.ok()) {
    uint64_t expected = 1;
    for (uint32_t d : array->dims) expected *= d;
    // The reader promises product(dims) payload bytes.
    if (array->data.size() != expected) __builtin_trap();
  }
  return 0;
}
