#include "ringmaster/rendezvous/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "ringmaster/rendezvous/tcp_store.h"

namespace ringmaster::rendezvous {
namespace auth {

core::Result<std::string> randomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return core::internalError("RAND_bytes could not supply " + std::to_string(n) +
                               " random bytes");
  }
  return out;
}

std::string toHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string proof(std::string_view secret, std::string_view protocol, Role role,
                  std::string_view server_nonce, std::string_view client_nonce,
                  std::string_view bound) {
  std::string message(protocol);
  message.append(role == Role::kClient ? " client" : " server");
  message.append(server_nonce);
  message.append(client_nonce);
  message.append(bound);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  // A non-null key pointer even for the empty secret: HMAC() treats null as "reuse the key".
  static const unsigned char kEmpty = 0;
  const void* key = secret.empty() ? &kEmpty : static_cast<const void*>(secret.data());
  if (HMAC(EVP_sha256(), key, static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac,
           &mac_len) == nullptr) {
    return {};  // never equal to a real proof: the handshake fails closed
  }
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

bool sameProof(std::string_view a, std::string_view b) {
  return a.size() == kProofBytes && b.size() == kProofBytes &&
         CRYPTO_memcmp(a.data(), b.data(), kProofBytes) == 0;
}

}  // namespace auth

core::Result<std::string> generateSecret() {
  RM_ASSIGN_OR_RETURN(std::string bytes, auth::randomBytes(kSecretRandomBytes));
  return auth::toHex(bytes);
}

}  // namespace ringmaster::rendezvous
