#include "model/loader/hub_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace strata::model {
namespace {

namespace fs = std::filesystem;

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// The commit a ref file names ("" when there is no such ref).
std::string read_ref(const fs::path& ref) {
  std::ifstream in(ref);
  std::string hash;
  if (!in || !std::getline(in, hash)) return "";
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  hash.erase(std::remove_if(hash.begin(), hash.end(), is_space), hash.end());
  return hash;
}

std::vector<std::string> list_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

// A snapshot directory: itself when it has config.json, else its one GGUF file.
StatusOr<std::string> model_in_snapshot(const fs::path& snapshot, const std::string& what) {
  if (path_exists(snapshot / "config.json")) return snapshot.string();
  std::vector<std::string> ggufs;
  for (const std::string& name : list_names(snapshot)) {
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) ggufs.push_back(name);
  }
  if (ggufs.size() == 1) return (snapshot / ggufs[0]).string();
  if (ggufs.empty()) {
    return not_found(what + ": the snapshot " + snapshot.string() +
                     " has neither config.json nor a .gguf file (an incomplete download?)");
  }
  return invalid_argument(what + ": the snapshot " + snapshot.string() + " holds " +
                          std::to_string(ggufs.size()) + " .gguf files (" + join(ggufs) +
                          "); give the path of the one to serve");
}

}  // namespace

HubEnvironment HubEnvironment::from_process() {
  HubEnvironment env;
  env.hf_hub_cache = env_or_empty("HF_HUB_CACHE");
  if (env.hf_hub_cache.empty()) env.hf_hub_cache = env_or_empty("HUGGINGFACE_HUB_CACHE");
  env.hf_home = env_or_empty("HF_HOME");
  env.xdg_cache_home = env_or_empty("XDG_CACHE_HOME");
  env.home = env_or_empty("HOME");
  return env;
}

std::string hub_cache_root(const HubEnvironment& env, const std::string& download_dir) {
  if (!download_dir.empty()) return download_dir;
  if (!env.hf_hub_cache.empty()) return env.hf_hub_cache;
  if (!env.hf_home.empty()) return (fs::path(env.hf_home) / "hub").string();
  if (!env.xdg_cache_home.empty()) {
    return (fs::path(env.xdg_cache_home) / "huggingface" / "hub").string();
  }
  return (fs::path(env.home.empty() ? "/" : env.home) / ".cache" / "huggingface" / "hub").string();
}

bool is_hub_model_id(const std::string& model) {
  if (model.empty() || model.size() > 200) return false;
  const size_t slash = model.find('/');
  if (slash != std::string::npos && model.find('/', slash + 1) != std::string::npos) return false;
  auto part_ok = [](const std::string& part) {
    if (part.empty() || part[0] == '.' || part[0] == '-' || part.find("..") != std::string::npos) {
      return false;
    }
    return std::all_of(part.begin(), part.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
  };
  if (slash == std::string::npos) return part_ok(model);
  return part_ok(model.substr(0, slash)) && part_ok(model.substr(slash + 1));
}

StatusOr<std::string> resolve_model_location(const ModelLocationRequest& request,
                                             const HubEnvironment& env) {
  const std::string& model = request.model;
  if (path_exists(model)) return model;
  if (!is_hub_model_id(model)) {
    return not_found("model '" + model + "' does not exist (not a file or directory)");
  }
  const std::string revision = request.revision.empty() ? "main" : request.revision;
  const fs::path root = hub_cache_root(env, request.download_dir);
  std::string folder = "models--" + model;
  for (size_t pos = folder.find('/'); pos != std::string::npos; pos = folder.find('/')) {
    folder.replace(pos, 1, "--");
  }
  const fs::path repo = root / folder;
  const std::string what = "model '" + model + "' (revision " + revision + ")";
  const std::string no_download =
      ". Strata does not download models: fetch it on a machine with network access "
      "(e.g. `hf download " + model + "`) into that cache, or give a local path";
  if (!path_exists(repo)) {
    return not_found(what + " is neither a local path nor in the Hugging Face cache: looked for " +
                     repo.string() +
                     (request.download_dir.empty()
                          ? " (cache root from HF_HUB_CACHE, else HF_HOME/hub, else "
                            "~/.cache/huggingface/hub; --download-dir overrides it)"
                          : " (--download-dir)") +
                     no_download);
  }
  const fs::path ref = repo / "refs" / revision;
  std::string commit = read_ref(ref);
  if (commit.empty() && path_exists(repo / "snapshots" / revision)) commit = revision;
  if (commit.empty()) {
    return not_found(what + ": the Hugging Face cache at " + repo.string() +
                     " has no ref or snapshot '" + revision + "' (refs: " +
                     join(list_names(repo / "refs")) +
                     "; snapshots: " + join(list_names(repo / "snapshots")) + ")" + no_download);
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!path_exists(snapshot)) {
    return not_found(what + ": " + ref.string() + " names commit " + commit + " but " +
                     snapshot.string() + " does not exist" + no_download);
  }
  return model_in_snapshot(snapshot, what);
}

}  // namespace strata::model
