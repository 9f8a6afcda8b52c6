// `ringmaster`: the command-line entry point. For now: `ringmaster local …`.
#include <iostream>
#include <string>
#include <vector>

#include "local/apiserver/local_command.h"
#include "local/kubelet/kubelet_command.h"

namespace {

constexpr const char* kUsage =
    "usage: ringmaster <command> [args]\n\n"
    "Commands:\n"
    "  local   the embedded single-node cluster (up, down, serve, kubelet)\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "local" && args.size() > 1 && args[1] == "kubelet") {
    // Dispatched here: the kubelet is its own library (an API client), not part of the server.
    auto status = ringmaster::local::kubelet::runKubeletCommand({args.begin() + 2, args.end()});
    if (!status.ok()) std::cerr << "ringmaster local kubelet: " << status.message() << "\n";
    return status.exitCode();
  }
  if (args[0] == "local") {
    auto status = ringmaster::local::runLocalCommand({args.begin() + 1, args.end()});
    if (!status.ok()) std::cerr << "ringmaster: " << status.message() << "\n";
    return status.exitCode();
  }
  std::cerr << "ringmaster: unknown command: " << args[0] << "\n" << kUsage;
  return 2;
}
