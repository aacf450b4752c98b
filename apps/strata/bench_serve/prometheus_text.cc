#include "bench_serve/prometheus_text.h"

#include <cstdlib>

namespace strata::bench {
namespace {

// Parses `{k="v",...}` starting at text[*i] == '{'; leaves *i after '}'.
Status parse_labels(std::string_view text, size_t* i, std::map<std::string, std::string>* out) {
  ++*i;
  while (*i < text.size() && text[*i] != '}') {
    size_t eq = text.find('=', *i);
    if (eq == std::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') {
      return data_loss("bad label in metrics line '" + std::string(text) + "'");
    }
    std::string key(text.substr(*i, eq - *i));
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value.push_back(text[j] == 'n' ? '\n' : text[j]);
      } else {
        value.push_back(text[j]);
      }
    }
    if (j >= text.size())
      return data_loss("unterminated label value in '" + std::string(text) + "'");
    (*out)[key] = value;
    *i = j + 1;
    if (*i < text.size() && text[*i] == ',') ++*i;
  }
  if (*i >= text.size()) return data_loss("unterminated label set in '" + std::string(text) + "'");
  ++*i;
  return Status();
}

StatusOr<PromSample> parse_line(std::string_view line) {
  PromSample s;
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
  s.name = std::string(line.substr(0, i));
  if (i < line.size() && line[i] == '{') STRATA_RETURN_IF_ERROR(parse_labels(line, &i, &s.labels));
  std::string rest(line.substr(i));
  const char* begin = rest.c_str();
  while (*begin == ' ' || *begin == '\t') ++begin;
  char* end = nullptr;
  s.value = std::strtod(begin, &end);  // also reads NaN, +Inf, -Inf
  if (end == begin) return data_loss("no value in metrics line '" + std::string(line) + "'");
  return s;
}

}  // namespace

StatusOr<std::vector<PromSample>> parse_prometheus_text(std::string_view text) {
  std::vector<PromSample> samples;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    STRATA_ASSIGN_OR_RETURN(PromSample s, parse_line(line));
    samples.push_back(std::move(s));
  }
  return samples;
}

double sum_samples(const std::vector<PromSample>& samples, const std::string& name,
                   const std::string& label_key, const std::string& label_value) {
  double sum = 0;
  for (const PromSample& s : samples) {
    if (s.name != name) continue;
    if (!label_key.empty()) {
      auto it = s.labels.find(label_key);
      if (it == s.labels.end() || it->second != label_value) continue;
    }
    sum += s.value;
  }
  return sum;
}

bool has_samples(const std::vector<PromSample>& samples, const std::string& name) {
  for (const PromSample& s : samples) {
    if (s.name == name) return true;
  }
  return false;
}

}  // namespace strata::bench
