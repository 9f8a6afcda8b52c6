#pragma once
// Typed command-line flags (and optional environment variables) declared in one place; --help is
// generated from the declarations. Accepted forms: --name=value, --name value, --flag (bools),
// --no-flag (bools).
//
// Ownership: FlagSet stores pointers to the caller's variables, which must outlive parse().
// Thread-safety: none; use from main(). Failure: parse() returns a kUsage Status naming the flag.

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::core {

class FlagSet {
 public:
  FlagSet(std::string program, std::string summary);

  // `env` (optional) names an environment variable read when the flag is absent from argv.
  void addString(std::string name, std::string* target, std::string help, std::string env = "");
  void addInt(std::string name, int64_t* target, std::string help, std::string env = "");
  void addDouble(std::string name, double* target, std::string help, std::string env = "");
  void addBool(std::string name, bool* target, std::string help, std::string env = "");

  // Parses argv[1..]. Arguments that are not flags go to `positional` (an error when null).
  // Sets *help to true and returns Ok when --help/-h is present.
  Status parse(int argc, const char* const* argv, bool* help,
               std::vector<std::string>* positional = nullptr);

  // True when the flag was given on the command line or through its environment variable.
  bool wasSet(const std::string& name) const { return set_.count(name) > 0; }

  std::string help() const;

 private:
  struct Flag {
    std::string name, help, env, kind, default_text;
    std::function<Status(const std::string&)> assign;
  };
  Flag* find(const std::string& name);
  void add(Flag flag);

  std::string program_, summary_;
  std::vector<Flag> flags_;
  std::set<std::string> set_;
};

// Strict number parsing for flags, env and config: the whole text must be a number.
Result<int64_t> parseInt(const std::string& text);
Result<double> parseDouble(const std::string& text);

}  // namespace ringmaster::core
