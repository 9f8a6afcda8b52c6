# rm_add_test(NAME name SOURCES ... LIBS ... [LABELS ...] [TIMEOUT s] [LOCAL_PODS] [ENVTEST])
# One GoogleTest binary per target; registered with ctest as one test per binary so that a
# suite of ranks-as-threads tests shares one process start. LOCAL_PODS: the test runs local pods
# (127.1.x.y): kubelets hold their addresses apart, but the pods' timing suffers when many such
# tests share the cores, so ctest -j runs at most two at once, one on each control plane
# (RESOURCE_LOCK local_pods for the embedded API server, local_pods_envtest for envtest's): the
# two halves are mostly waiting (operator_fault_e2e_test: 43 s of CPU in 118 s), and side by
# side they took the product's cluster tests from 16.5 to 9 minutes. They carry the label
# local_pods, so that scripts/test can keep them apart from another tree's cluster tests.
# A binary whose tests all skipped exits 77 (lib/testing/gtest_main.cc): ctest says Skipped.
# ENVTEST: the binary's tests are instantiated per control plane (tests/testutil's
# kControlPlanes); ctest runs them as two tests, <name> (the embedded API server) and
# <name>_envtest (a real one, label envtest), so that the second says Skipped where
# RINGMASTER_ENVTEST is not set instead of hiding inside a pass.
include(GoogleTest)
set(RM_TEST_SKIP_EXIT_CODE 77)
add_library(rm_gtest_main STATIC ${PROJECT_SOURCE_DIR}/lib/testing/gtest_main.cc)
target_link_libraries(rm_gtest_main PUBLIC GTest::gtest)
# The tests that drive the product's binaries (labels e2e, product, slow, gpu) are what
# scripts/test builds and runs in the product tree: `cmake --build <dir> --target product_tests`.
set(RM_PRODUCT_TEST_LABELS "e2e|product|slow|gpu")
add_custom_target(product_tests)
function(rm_add_test)
  cmake_parse_arguments(T "LOCAL_PODS;ENVTEST" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock rm_gtest_main)
  # The test code itself is not what is under test: -O0 compiles it ~35% faster (measured on
  # factory_test, round_trip_test, operator_fault_e2e_test); the libraries and binaries under
  # test keep their optimization (-O3 in the product tree, -O1 in the sanitized one).
  target_compile_options(${T_NAME} PRIVATE -O0)
  # gtest and nlohmann's json parsed once per test binary, not once per file: about a fifth
  # off a ten-file test's compile (operator_test, 66 s -> 54 s); a one-file test gains nothing.
  list(LENGTH T_SOURCES source_count)
  if(source_count GREATER 2)
    target_precompile_headers(${T_NAME} PRIVATE <gtest/gtest.h> <nlohmann/json.hpp> <string>
      <vector> <map>)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(test_names ${T_NAME})
  if(T_ENVTEST)
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} --gtest_filter=-*/envtest)
    add_test(NAME ${T_NAME}_envtest COMMAND ${T_NAME} --gtest_filter=*/envtest)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
    set_tests_properties(${T_NAME}_envtest PROPERTIES LABELS "${T_LABELS};envtest")
    list(APPEND test_names ${T_NAME}_envtest)
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_NAME})
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
  set_tests_properties(${test_names} PROPERTIES TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE ${RM_TEST_SKIP_EXIT_CODE}
    ENVIRONMENT "RM_SOURCE_DIR=${PROJECT_SOURCE_DIR};RM_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(T_LABELS MATCHES "^(.*;)?(${RM_PRODUCT_TEST_LABELS})(;.*)?$")
    add_dependencies(product_tests ${T_NAME})
  endif()
  if(RM_SANITIZE AND T_LABELS MATCHES "^(.*;)?(e2e|slow|gpu)(;.*)?$")
    # scripts/test runs these on the product tree only: the sanitized tree builds them on demand.
    set_target_properties(${T_NAME} PROPERTIES EXCLUDE_FROM_ALL TRUE)
  endif()
  if(T_LOCAL_PODS)
    set_tests_properties(${T_NAME} PROPERTIES RESOURCE_LOCK local_pods COST 100)
    if(T_ENVTEST)
      set_tests_properties(${T_NAME}_envtest PROPERTIES RESOURCE_LOCK local_pods_envtest COST 100)
    endif()
    foreach(test_name ${test_names})
      set_property(TEST ${test_name} APPEND PROPERTY LABELS local_pods)
    endforeach()
  endif()
endfunction()
