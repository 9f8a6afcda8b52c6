// main() for every GoogleTest binary of the project: like gtest_main, except that a binary in
// which every test skipped (GTEST_SKIP: no GPU, no kubectl, no data set) exits
// kSkipExitCode, which ctest reports as "Not Run (Skipped)" rather than "Passed"
// (SKIP_RETURN_CODE, set by rm_add_test). A binary with one passing test passes as before.
#include <gtest/gtest.h>

namespace {
constexpr int kSkipExitCode = 77;  // the automake convention; rm_add_test uses the same value
}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  if (result == 0 && unit.successful_test_count() == 0 && unit.skipped_test_count() > 0)
    return kSkipExitCode;
  return result;
}
