#include "trainer/comm/gloo_store_adapter.h"

namespace ringmaster::trainer::comm {

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  core::Status s = store_->set(key, data);
  if (!s.ok()) throw StoreError(std::move(s).withContext("store set '" + key + "'"));
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  core::Result<rendezvous::Bytes> r = store_->get(key, timeout_);
  if (!r.ok()) throw StoreError(r.status().withContext("store get '" + key + "'"));
  return std::move(r).value();
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  // Gloo passes its context timeout here; a zero (kNoTimeout) means "ours".
  core::Status s = store_->wait(keys, timeout.count() > 0 ? timeout : timeout_);
  if (!s.ok()) throw StoreError(std::move(s).withContext("store wait"));
}

}  // namespace ringmaster::trainer::comm
