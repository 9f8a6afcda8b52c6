// `ringmaster`: the command-line entry point. For now: `ringmaster local …` (DESIGN §6).
#include <iostream>
#include <string>
#include <vector>

#include "local/apiserver/local_command.h"

namespace {

constexpr const char* kUsage =
    "usage: ringmaster <command> [args]\n\n"
    "Commands:\n"
    "  local   the embedded single-node cluster (up, down, serve)\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "local") {
    auto status = ringmaster::local::runLocalCommand({args.begin() + 1, args.end()});
    if (!status.ok()) std::cerr << "ringmaster: " << status.message() << "\n";
    return status.exitCode();
  }
  std::cerr << "ringmaster: unknown command: " << args[0] << "\n" << kUsage;
  return 2;
}
