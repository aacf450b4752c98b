// Command-line flags in the GNU long form vLLM users know: `--name value`,
// `--name=value`, and `--flag` / `--no-flag` for booleans. Unknown flags are
// errors that suggest the closest known name.
//
// Used on the main thread during start-up only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::app {

class FlagSet {
 public:
  explicit FlagSet(std::string command) : command_(std::move(command)) {}

  void add_string(const std::string& name, std::string* value, const std::string& help);
  void add_int(const std::string& name, int64_t* value, const std::string& help);
  void add_double(const std::string& name, double* value, const std::string& help);
  void add_bool(const std::string& name, bool* value, const std::string& help);

  // Parses args (not including the program or command name). Positional
  // arguments are collected into positional(). `--help` sets help_requested().
  Status parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_requested_; }
  const std::vector<std::string>& positional() const { return positional_; }
  bool was_set(const std::string& name) const;
  std::string usage() const;

 private:
  struct Flag {
    std::string name;
    std::string help;
    bool is_bool = false;
    std::string default_text;
    std::function<Status(const std::string&)> set;
    bool set_by_user = false;
  };
  Flag* find(const std::string& name);
  std::string suggest(const std::string& name) const;

  std::string command_;
  std::vector<Flag> flags_;
  std::vector<std::string> positional_;
  bool help_requested_ = false;
};

// Parses "1,2,3" into ids; errors name the bad element.
StatusOr<std::vector<int32_t>> parse_id_list(const std::string& text);

}  // namespace strata::app
