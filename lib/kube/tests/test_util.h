#pragma once
// Shared helpers for kube_types_test: test data loading and round-trip checks.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"

namespace ringmaster::kube::testing {

inline std::string readTestFile(const std::string& name) {
  std::ifstream in(std::string(RM_KUBE_TESTDATA_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << "cannot open testdata/" << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline nlohmann::json loadJson(const std::string& name) {
  return nlohmann::json::parse(readTestFile(name));
}

inline std::vector<std::string> loadLines(const std::string& name) {
  std::vector<std::string> lines;
  std::stringstream ss(readTestFile(name));
  for (std::string line; std::getline(ss, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// Decodes `original` as T, re-encodes it, and expects the same JSON (key order aside).
template <class T>
T expectRoundTrip(const nlohmann::json& original) {
  core::Result<T> decoded = decode<T>(original);
  EXPECT_TRUE(decoded.ok()) << decoded.status().toString();
  if (!decoded.ok()) return T{};
  nlohmann::json reencoded = encode(*decoded);
  EXPECT_EQ(reencoded, original) << "diff: " << nlohmann::json::diff(original, reencoded).dump();
  return std::move(decoded).value();
}

}  // namespace ringmaster::kube::testing
