#include "ringmaster/core/flags.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace ringmaster::core {

Result<int64_t> parseInt(const std::string& text) {
  if (text.empty()) return invalidArgument("expected an integer, got an empty value");
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0')
    return invalidArgument("expected an integer, got '" + text + "'");
  return static_cast<int64_t>(value);
}

Result<double> parseDouble(const std::string& text) {
  if (text.empty()) return invalidArgument("expected a number, got an empty value");
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == nullptr || *end != '\0')
    return invalidArgument("expected a number, got '" + text + "'");
  return value;
}

FlagSet::FlagSet(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void FlagSet::add(Flag flag) { flags_.push_back(std::move(flag)); }

FlagSet::Flag* FlagSet::find(const std::string& name) {
  for (auto& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

void FlagSet::addString(std::string name, std::string* target, std::string help, std::string env) {
  add({std::move(name), std::move(help), std::move(env), "string",
       target->empty() ? "" : "\"" + *target + "\"", [target](const std::string& v) {
         *target = v;
         return Status::Ok();
       }});
}

void FlagSet::addInt(std::string name, int64_t* target, std::string help, std::string env) {
  add({std::move(name), std::move(help), std::move(env), "int", std::to_string(*target),
       [target](const std::string& v) -> Status {
         RM_ASSIGN_OR_RETURN(*target, parseInt(v));
         return Status::Ok();
       }});
}

void FlagSet::addDouble(std::string name, double* target, std::string help, std::string env) {
  std::ostringstream def;
  def << *target;
  add({std::move(name), std::move(help), std::move(env), "number", def.str(),
       [target](const std::string& v) -> Status {
         RM_ASSIGN_OR_RETURN(*target, parseDouble(v));
         return Status::Ok();
       }});
}

void FlagSet::addBool(std::string name, bool* target, std::string help, std::string env) {
  add({std::move(name), std::move(help), std::move(env), "bool", *target ? "true" : "false",
       [target](const std::string& v) -> Status {
         if (v == "true" || v == "1" || v == "yes") {
           *target = true;
         } else if (v == "false" || v == "0" || v == "no") {
           *target = false;
         } else {
           return invalidArgument("expected true or false, got '" + v + "'");
         }
         return Status::Ok();
       }});
}

Status FlagSet::parse(int argc, const char* const* argv, bool* help,
                      std::vector<std::string>* positional) {
  *help = false;
  std::set<std::string> from_argv;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return Status::Ok();
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (positional == nullptr) return usageError("unexpected argument '" + arg + "'");
      positional->push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* flag = find(name);
    if (flag == nullptr && !has_value && name.rfind("no-", 0) == 0) {
      Flag* negated = find(name.substr(3));
      if (negated != nullptr && negated->kind == "bool") {
        flag = negated;
        value = "false";
        has_value = true;
      }
    }
    if (flag == nullptr) return usageError("unknown flag --" + name + " (see --help)");
    if (!has_value) {
      if (flag->kind == "bool") {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return usageError("flag --" + name + " needs a value");
      }
    }
    Status s = flag->assign(value);
    if (!s.ok()) return usageError("flag --" + flag->name + ": " + s.message());
    from_argv.insert(flag->name);
    set_.insert(flag->name);
  }
  for (auto& flag : flags_) {
    if (flag.env.empty() || from_argv.count(flag.name)) continue;
    const char* env = std::getenv(flag.env.c_str());
    if (env == nullptr) continue;
    Status s = flag.assign(env);
    if (!s.ok()) return usageError("environment " + flag.env + ": " + s.message());
    set_.insert(flag.name);
  }
  return Status::Ok();
}

std::string FlagSet::help() const {
  std::ostringstream out;
  out << "Usage: " << program_ << " [flags]\n\n" << summary_ << "\n\nFlags:\n";
  for (const auto& f : flags_) {
    std::string head = "  --" + f.name + (f.kind == "bool" ? "" : "=<" + f.kind + ">");
    out << head;
    if (head.size() < 30)
      out << std::string(30 - head.size(), ' ');
    else
      out << "\n" << std::string(30, ' ');
    out << f.help;
    if (!f.default_text.empty()) out << " (default " << f.default_text << ")";
    if (!f.env.empty()) out << " [env " << f.env << "]";
    out << "\n";
  }
  out << "  --help                      print this help and exit\n";
  return out.str();
}

}  // namespace ringmaster::core
