#include "local/apiserver/registry.h"

namespace ringmaster::local {

void ResourceRegistry::add(ApiResource resource) {
  std::lock_guard lock(mu_);
  Key key{resource.type.group, resource.type.version, resource.type.resource};
  resources_[key] = std::make_shared<const ApiResource>(std::move(resource));
}

void ResourceRegistry::remove(const std::string& group, const std::string& version,
                              const std::string& plural) {
  std::lock_guard lock(mu_);
  resources_.erase(Key{group, version, plural});
}

std::shared_ptr<const ApiResource> ResourceRegistry::find(const std::string& group,
                                                          const std::string& version,
                                                          const std::string& plural) const {
  std::lock_guard lock(mu_);
  auto it = resources_.find(Key{group, version, plural});
  if (it == resources_.end()) return nullptr;
  return it->second;
}

std::vector<ApiResource> ResourceRegistry::all() const {
  std::lock_guard lock(mu_);
  std::vector<ApiResource> out;
  out.reserve(resources_.size());
  for (const auto& [key, r] : resources_) out.push_back(*r);
  return out;
}

bool ResourceRegistry::hasGroupVersion(const std::string& group, const std::string& version) const {
  std::lock_guard lock(mu_);
  auto it = resources_.lower_bound(Key{group, version, ""});
  return it != resources_.end() && std::get<0>(it->first) == group &&
         std::get<1>(it->first) == version;
}

}  // namespace ringmaster::local
