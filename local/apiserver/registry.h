#pragma once
// ResourceRegistry: the resources the API server serves, by group/version/plural. The store holds
// one ResourceType per {group, resource}; this registry adds the discovery and printing facts.
// CRDs add and remove entries while requests are served.
//
// Ownership: owns copies of every ApiResource; lookups return copies.
// Thread-safety: all methods are thread-safe (one mutex). Failure: lookups return nullopt.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "local/apiserver/api_resource.h"

namespace ringmaster::local {

class ResourceRegistry {
 public:
  void add(ApiResource resource);  // replaces one with the same group/version/plural
  void remove(const std::string& group, const std::string& version, const std::string& plural);
  // nullptr when not served. The resource stays valid while held, even if it is replaced.
  std::shared_ptr<const ApiResource> find(const std::string& group, const std::string& version,
                                          const std::string& plural) const;
  // Every resource, ordered by group then version then plural.
  std::vector<ApiResource> all() const;
  // Whether the group/version is served at all.
  bool hasGroupVersion(const std::string& group, const std::string& version) const;

 private:
  using Key = std::tuple<std::string, std::string, std::string>;
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<const ApiResource>> resources_;
};

}  // namespace ringmaster::local
