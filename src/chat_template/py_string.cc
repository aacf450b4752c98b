#include "chat_template/py_string.h"

#include <algorithm>
#include <cctype>

#include "chat_template/value.h"

namespace strata::chat_template {

bool is_py_space(std::string_view ch) {
  if (ch.size() == 1) {
    unsigned char c = static_cast<unsigned char>(ch[0]);
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
  }
  static const char* const kWide[] = {"\u0085", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002",
                                      "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008",
                                      "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f",
                                      "\u3000"};
  return std::any_of(std::begin(kWide), std::end(kWide), [&](const char* w) { return ch == w; });
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<std::string_view> cps = utf8_chars(s);
  std::vector<std::string_view> strip_set;
  if (chars != nullptr) strip_set = utf8_chars(*chars);
  auto strip_me = [&](std::string_view c) {
    if (chars == nullptr) return is_py_space(c);
    return std::find(strip_set.begin(), strip_set.end(), c) != strip_set.end();
  };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strip_me(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip_me(cps[end - 1])) --end;
  }
  std::string out;
  for (size_t i = begin; i < end; ++i) out += cps[i];
  return out;
}

std::string py_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string py_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out = py_lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string py_title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) {
      c = static_cast<char>(prev_cased ? std::tolower(u) : std::toupper(u));
      prev_cased = true;
    } else {
      prev_cased = u >= 0x80 && prev_cased;  // treat non-ASCII as uncased unless mid-word
    }
  }
  return out;
}

namespace {

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit, bool from_right) {
  std::vector<std::string_view> cps = utf8_chars(s);
  if (from_right) std::reverse(cps.begin(), cps.end());
  std::vector<std::string> out;
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_py_space(cps[i])) ++i;
    if (i >= cps.size()) break;
    std::string piece;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      for (size_t j = i; j < cps.size(); ++j) piece += cps[j];
      out.push_back(std::move(piece));
      break;
    }
    while (i < cps.size() && !is_py_space(cps[i])) piece += cps[i++];
    out.push_back(std::move(piece));
  }
  if (from_right) {
    // Pieces were built reversed; reverse their code points back.
    for (std::string& p : out) {
      std::vector<std::string_view> pc = utf8_chars(p);
      std::string fixed;
      for (auto it = pc.rbegin(); it != pc.rend(); ++it) fixed += *it;
      p = std::move(fixed);
    }
    std::reverse(out.begin(), out.end());
  }
  return out;
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::string* sep, int64_t maxsplit,
                                  bool from_right) {
  if (sep == nullptr) return split_whitespace(s, maxsplit, from_right);
  std::vector<std::string> out;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t hit = s.find(*sep, start);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(start, hit - start));
      start = hit + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  size_t end = s.size();
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    if (end < sep->size()) break;
    size_t hit = s.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
    end = hit;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      out.emplace_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    int64_t done = 0;
    for (std::string_view c : utf8_chars(s)) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      out += c;
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += repl;
    start = hit + old.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

}  // namespace strata::chat_template
