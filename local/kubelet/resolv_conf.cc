#include "local/kubelet/resolv_conf.h"

#include <algorithm>
#include <sstream>

namespace ringmaster::local::kubelet {
namespace {

constexpr size_t kMaxNameservers = 3;
constexpr size_t kMaxSearches = 32;

void appendNew(std::vector<std::string>& to, const std::string& value) {
  if (!value.empty() && std::find(to.begin(), to.end(), value) == to.end()) to.push_back(value);
}

std::string optionName(const std::string& option) { return option.substr(0, option.find(':')); }

// An option replaces the one of its name, else joins the end.
void mergeOption(std::vector<std::string>& options, const std::string& option) {
  const auto same = std::find_if(options.begin(), options.end(), [&](const std::string& o) {
    return optionName(o) == optionName(option);
  });
  if (same != options.end()) {
    *same = option;
  } else {
    options.push_back(option);
  }
}

std::vector<std::string> stringsOf(const nlohmann::json& config, const char* field) {
  std::vector<std::string> out;
  if (!config.is_object() || !config.contains(field) || !config[field].is_array()) return out;
  for (const auto& v : config[field]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

ResolvConf parseResolvConf(const std::string& text) {
  ResolvConf conf;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find_first_of("#;"));
    std::istringstream words(line);
    std::string key, word;
    if (!(words >> key)) continue;
    std::vector<std::string> rest;
    while (words >> word) rest.push_back(word);
    if (key == "nameserver" && !rest.empty()) {
      conf.nameservers.push_back(rest.front());
    } else if (key == "search" || key == "domain") {
      conf.searches = rest;
    } else if (key == "options") {
      for (const auto& o : rest) mergeOption(conf.options, o);
    }
  }
  return conf;
}

ResolvConf podResolvConf(const ResolvConf& host, const nlohmann::json& dns_policy,
                         const nlohmann::json& dns_config) {
  const std::string policy = dns_policy.is_string() ? dns_policy.get<std::string>() : "";
  ResolvConf conf = policy == "None" ? ResolvConf{} : host;
  for (const auto& s : stringsOf(dns_config, "nameservers")) appendNew(conf.nameservers, s);
  for (const auto& s : stringsOf(dns_config, "searches")) appendNew(conf.searches, s);
  if (dns_config.is_object() && dns_config.contains("options") &&
      dns_config["options"].is_array()) {
    for (const auto& o : dns_config["options"]) {
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) continue;
      std::string option = o["name"].get<std::string>();
      if (o.contains("value") && o["value"].is_string()) {
        option += ':';
        option += o["value"].get<std::string>();
      }
      mergeOption(conf.options, option);
    }
  }
  if (conf.nameservers.size() > kMaxNameservers) conf.nameservers.resize(kMaxNameservers);
  if (conf.searches.size() > kMaxSearches) conf.searches.resize(kMaxSearches);
  return conf;
}

std::string renderResolvConf(const ResolvConf& conf) {
  std::string text;
  const auto line = [&text](const char* key, const std::vector<std::string>& values) {
    if (values.empty()) return;
    text += key;
    for (const auto& v : values) {
      text += ' ';
      text += v;
    }
    text += '\n';
  };
  line("search", conf.searches);
  for (const auto& ns : conf.nameservers) line("nameserver", {ns});
  line("options", conf.options);
  return text;
}

}  // namespace ringmaster::local::kubelet
