#include "launcher/mpi_commands.h"

#include <sstream>

#include "ringmaster/core/flags.h"

namespace ringmaster::launcher {
namespace {

bool hasAny(const std::string& s, const char* chars) {
  return s.find_first_of(chars) != std::string::npos;
}

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

core::Status checkPath(const char* what, const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return core::invalidArgument(std::string("sshd_config: ") + what + " '" + path +
                                 "' must be an absolute path");
  }
  if (hasAny(path, "\"%\n\r")) {
    return core::invalidArgument(std::string("sshd_config: ") + what + " '" + path +
                                 "' must not contain '\"', '%' or line breaks");
  }
  return core::Status::Ok();
}

}  // namespace

core::Result<std::vector<HostfileEntry>> parseHostfile(const std::string& text) {
  std::vector<HostfileEntry> hosts;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    HostfileEntry entry;
    if (!(words >> entry.host)) continue;  // blank or comment
    const std::string where = "hostfile line " + std::to_string(number) + " '" + line + "'";
    std::string word;
    while (words >> word) {
      const size_t eq = word.find('=');
      const std::string key = word.substr(0, eq);
      if (eq == std::string::npos || (key != "slots" && key != "max_slots")) {
        return core::invalidArgument(where + ": expected 'HOST slots=N', got '" + word + "'");
      }
      core::Result<int64_t> n = core::parseInt(word.substr(eq + 1));
      if (!n.ok() || *n < 1 || *n > 65536) {
        return core::invalidArgument(where + ": " + key + " must be a positive integer");
      }
      if (key == "slots") entry.slots = static_cast<int>(*n);
    }
    for (const HostfileEntry& seen : hosts) {
      if (seen.host == entry.host) {
        return core::invalidArgument(where + ": host '" + entry.host + "' is listed twice");
      }
    }
    hosts.push_back(std::move(entry));
  }
  if (hosts.empty()) return core::invalidArgument("hostfile lists no hosts");
  return hosts;
}

std::string sshdQuoted(std::string_view text) {
  // Inside quotes sshd's config reader takes \\ for a backslash and \" for a quote; any other
  // byte but a line break stands for itself.
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

core::Status validateSshdSettings(const SshdSettings& s) {
  if (s.listen_address.empty() || hasAny(s.listen_address, " \t\"%\n\r")) {
    return core::invalidArgument("sshd_config: listen address '" + s.listen_address +
                                 "' is not an address");
  }
  if (s.port < 1 || s.port > 65535) {
    return core::invalidArgument("sshd_config: port " + std::to_string(s.port) +
                                 " is not a TCP port");
  }
  RM_RETURN_IF_ERROR(checkPath("host key", s.host_key));
  RM_RETURN_IF_ERROR(checkPath("authorized keys file", s.authorized_keys));
  for (const auto& [name, value] : s.session_env) {
    if (name.empty() || hasAny(name, "= \t\"\\\n\r") || hasAny(value, "\n\r")) {
      return core::invalidArgument("sshd_config: SetEnv cannot carry variable '" + name + "'");
    }
  }
  return core::Status::Ok();
}

std::string sshdConfig(const SshdSettings& s) {
  std::ostringstream out;
  out << "# Written by ringmaster-launcher (MPI mode): this pod's sshd, for mpirun's orted.\n"
      << "ListenAddress " << s.listen_address << "\n"
      << "Port " << s.port << "\n"
      << "HostKey \"" << s.host_key << "\"\n"
      << "AuthorizedKeysFile \"" << s.authorized_keys << "\"\n"
      << "PubkeyAuthentication yes\n"
      << "PasswordAuthentication no\n"
      << "KbdInteractiveAuthentication no\n"
      << "PermitRootLogin prohibit-password\n"
      << "StrictModes no\n"
      << "UsePAM no\n"
      << "UseDNS no\n"
      << "PidFile none\n"
      << "PrintMotd no\n"
      << "PrintLastLog no\n"
      << "X11Forwarding no\n"
      << "AllowTcpForwarding no\n"
      << "MaxStartups 100:30:200\n";  // every rank's orted connects at once on big jobs
  // sshd takes only the first SetEnv line: every variable goes on one, each quoted.
  if (!s.session_env.empty()) {
    out << "SetEnv";
    for (const auto& [name, value] : s.session_env) {
      out << " \"" << name << "=" << sshdQuoted(value) << "\"";
    }
    out << "\n";
  }
  return out.str();
}

bool forwardToSshSession(const std::string& name, const std::string& value) {
  static const char* const kPerLogin[] = {"USER",  "LOGNAME", "HOME",      "SHELL", "MAIL",
                                          "TERM",  "PWD",     "OLDPWD",    "SHLVL", "_",
                                          "TMOUT", "DISPLAY", "XAUTHORITY"};
  for (const char* n : kPerLogin) {
    if (name == n) return false;
  }
  for (const char* prefix : {"SSH_", "OMPI_", "PMIX_", "OPAL_", "ORTE_", "PRTE_"}) {
    if (startsWith(name, prefix)) return false;
  }
  return !name.empty() && !hasAny(name, "= \t\"\\\n\r") && !hasAny(value, "\n\r");
}

std::string sshAgent(int port, const std::string& identity) {
  return "ssh -p " + std::to_string(port) + " -i " + identity +
         " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
         " -o BatchMode=yes -o ConnectionAttempts=10";
}

core::Result<std::vector<std::string>> mpirunArgv(const MpirunSettings& s) {
  if (s.program.empty()) return core::invalidArgument("mpirun: no program to run");
  if (s.np < 1) return core::invalidArgument("mpirun: -np " + std::to_string(s.np));
  if (s.identity.empty() || hasAny(s.identity, " \t\n\r\"'")) {
    // Open MPI splits plm_rsh_agent at spaces and does not unquote.
    return core::invalidArgument("mpirun: ssh identity '" + s.identity +
                                 "' must be a path without whitespace or quotes");
  }
  std::vector<std::string> argv = {s.mpirun,
                                   "--hostfile",
                                   s.hostfile,
                                   "-np",
                                   std::to_string(s.np),
                                   "--map-by",
                                   "slot",
                                   "--bind-to",
                                   "none",
                                   "--mca",
                                   "orte_keep_fqdn_hostnames",
                                   "1",
                                   "--mca",
                                   "plm_rsh_agent",
                                   sshAgent(s.ssh_port, s.identity)};
  if (!s.iface.empty()) {
    argv.insert(argv.end(),
                {"--mca", "btl_tcp_if_include", s.iface, "--mca", "oob_tcp_if_include", s.iface});
  }
  if (s.allow_run_as_root) argv.push_back("--allow-run-as-root");
  for (const auto& [name, value] : s.env) {
    if (name.empty() || hasAny(name, "= \t")) {
      return core::invalidArgument("mpirun: cannot forward variable '" + name + "'");
    }
    argv.insert(argv.end(), {"-x", name + "=" + value});
  }
  for (const std::string& name : s.forward_env) {
    if (name.empty() || hasAny(name, "= \t")) {
      return core::invalidArgument("mpirun: cannot forward variable '" + name + "'");
    }
    argv.insert(argv.end(), {"-x", name});
  }
  argv.insert(argv.end(), s.program.begin(), s.program.end());
  return argv;
}

}  // namespace ringmaster::launcher
