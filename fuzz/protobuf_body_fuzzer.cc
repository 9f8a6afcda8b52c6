// Protobuf request bodies (Content-Type: application/vnd.kubernetes.protobuf) as the API
// server decodes them: local/apiserver/protobuf_body.h.
#include <string_view>

#include "local/apiserver/protobuf_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto obj = ringmaster::local::decodeProtobufBody(
      std::string_view(reinterpret_cast<const char*>(data), size));
  // The store keeps what was decoded as text (replacing invalid UTF-8, as it does for every
  // object).
  if (obj) (void)obj->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
