#include "local/kubelet/cni.h"

namespace ringmaster::local::kubelet {

nlohmann::json bridgeNetworkConfig(const std::string& bridge, const std::string& subnet,
                                   const std::string& ipam_dir) {
  return {{"cniVersion", kCniVersion},
          {"name", "ringmaster"},
          {"type", "bridge"},
          {"bridge", bridge},
          {"isGateway", true},
          {"ipMasq", false},
          {"hairpinMode", true},
          {"ipam",
           {{"type", "host-local"}, {"ranges", {{{{"subnet", subnet}}}}}, {"dataDir", ipam_dir}}}};
}

nlohmann::json loopbackNetworkConfig() {
  return {{"cniVersion", kCniVersion}, {"name", "ringmaster-lo"}, {"type", "loopback"}};
}

std::vector<std::string> cniEnvironment(CniCommand command, const std::string& container_id,
                                        const std::string& netns_path, const std::string& ifname,
                                        const std::string& plugin_dir) {
  return {std::string("CNI_COMMAND=") + (command == CniCommand::kAdd ? "ADD" : "DEL"),
          "CNI_CONTAINERID=" + container_id, "CNI_NETNS=" + netns_path, "CNI_IFNAME=" + ifname,
          "CNI_PATH=" + plugin_dir};
}

core::Result<std::string> parseCniResult(int exit_code, const std::string& stdout_text) {
  const nlohmann::json result = nlohmann::json::parse(stdout_text, nullptr, false);
  if (exit_code != 0) {
    std::string words = "exit code " + std::to_string(exit_code);
    if (result.is_object() && result.contains("msg") && result["msg"].is_string()) {
      words = result["msg"].get<std::string>();
      if (result.contains("details") && result["details"].is_string() &&
          !result["details"].get<std::string>().empty()) {
        words += ": " + result["details"].get<std::string>();
      }
    } else if (!stdout_text.empty()) {
      words += ": " + stdout_text.substr(0, 200);
    }
    return core::unavailable(words);
  }
  if (!result.is_object()) return core::internalError("the plugin's result is not a JSON object");
  if (result.contains("ips") && result["ips"].is_array()) {
    for (const auto& ip : result["ips"]) {
      if (!ip.is_object() || !ip.contains("address") || !ip["address"].is_string()) continue;
      std::string address = ip["address"].get<std::string>();
      address = address.substr(0, address.find('/'));
      if (address.find('.') != std::string::npos) return address;
    }
  }
  return core::internalError("the plugin's result has no IPv4 address: " +
                             stdout_text.substr(0, 200));
}

}  // namespace ringmaster::local::kubelet
