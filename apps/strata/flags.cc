#include "flags.h"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace strata::app {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

template <typename T>
Status parse_number(const std::string& flag, const std::string& text, T* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  if (ec != std::errc() || ptr != end) {
    return invalid_argument("--" + flag + " expects a number, got '" + text + "'");
  }
  return Status();
}

}  // namespace

void FlagSet::add_string(const std::string& name, std::string* value, const std::string& help) {
  flags_.push_back({name, help, false, *value, [value](const std::string& v) {
                      *value = v;
                      return Status();
                    }});
}

void FlagSet::add_int(const std::string& name, int64_t* value, const std::string& help) {
  flags_.push_back({name, help, false, std::to_string(*value),
                    [name, value](const std::string& v) { return parse_number(name, v, value); }});
}

void FlagSet::add_double(const std::string& name, double* value, const std::string& help) {
  std::ostringstream def;
  def << *value;
  flags_.push_back({name, help, false, def.str(), [name, value](const std::string& v) {
                      return parse_number(name, v, value);
                    }});
}

void FlagSet::add_bool(const std::string& name, bool* value, const std::string& help) {
  flags_.push_back({name, help, true, *value ? "true" : "false", [name, value](const std::string& v) {
                      if (v == "true" || v == "1") {
                        *value = true;
                      } else if (v == "false" || v == "0") {
                        *value = false;
                      } else {
                        return invalid_argument("--" + name + " expects true or false, got '" +
                                                v + "'");
                      }
                      return Status();
                    }});
}

FlagSet::Flag* FlagSet::find(const std::string& name) {
  for (Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool FlagSet::was_set(const std::string& name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return f.set_by_user;
  }
  return false;
}

std::string FlagSet::suggest(const std::string& name) const {
  std::string best;
  size_t best_distance = name.size() / 2 + 2;
  for (const Flag& f : flags_) {
    size_t d = edit_distance(name, f.name);
    if (d < best_distance) {
      best_distance = d;
      best = f.name;
    }
  }
  return best.empty() ? "" : "; did you mean --" + best + "?";
}

Status FlagSet::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* flag = find(name);
    if (flag == nullptr && name.rfind("no-", 0) == 0) {
      flag = find(name.substr(3));
      if (flag != nullptr && flag->is_bool && !has_value) {
        STRATA_RETURN_IF_ERROR(flag->set("false"));
        flag->set_by_user = true;
        continue;
      }
      flag = nullptr;
    }
    if (flag == nullptr) {
      return invalid_argument("unknown flag --" + name + " for 'strata " + command_ + "'" +
                              suggest(name));
    }
    if (!has_value) {
      if (flag->is_bool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return invalid_argument("--" + name + " needs a value");
      }
    }
    STRATA_RETURN_IF_ERROR(flag->set(value));
    flag->set_by_user = true;
  }
  return Status();
}

std::string FlagSet::usage() const {
  std::ostringstream out;
  out << "usage: strata " << command_ << " [flags]\n\nflags:\n";
  for (const Flag& f : flags_) {
    std::string left = "  --" + f.name + (f.is_bool ? "" : " VALUE");
    out << left << std::string(left.size() < 30 ? 30 - left.size() : 1, ' ') << f.help;
    if (!f.default_text.empty()) out << " (default: " << f.default_text << ")";
    out << "\n";
  }
  return out.str();
}

StatusOr<std::vector<int32_t>> parse_id_list(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    int32_t id = 0;
    Status s = parse_number("prompt-ids", item, &id);
    if (!s.ok()) return invalid_argument("--prompt-ids: '" + item + "' is not a token id");
    ids.push_back(id);
  }
  if (ids.empty()) return invalid_argument("--prompt-ids is empty");
  return ids;
}

}  // namespace strata::app
