// Finds a Hugging Face model id ("Qwen/Qwen2.5-0.5B-Instruct") in the local
// Hugging Face cache, exactly where the HF libraries put it, without any
// network access: Strata never downloads.
//
// Cache root, as huggingface_hub resolves it: --download-dir when given (vLLM
// passes it as cache_dir), else $HF_HUB_CACHE (or the older
// $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
// Layout: ROOT/models--ORG--NAME/refs/REVISION holds a commit hash;
// ROOT/models--ORG--NAME/snapshots/HASH/ holds the files. A revision may also
// be the commit hash itself. A snapshot without config.json that holds exactly
// one .gguf file resolves to that file.
//
// Operations: resolve_model_location (any thread; reads the file system).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace strata::model {

// The environment variables the lookup reads (separate for tests).
struct HubEnvironment {
  std::string hf_hub_cache;           // $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE
  std::string hf_home;                // $HF_HOME
  std::string xdg_cache_home;         // $XDG_CACHE_HOME
  std::string home;                   // $HOME
  static HubEnvironment from_process();
};

struct ModelLocationRequest {
  std::string model;         // a path, or a Hugging Face id
  std::string revision;      // "" = "main"
  std::string download_dir;  // --download-dir: the cache root when set
};

// The hub cache directory the lookup uses.
std::string hub_cache_root(const HubEnvironment& env, const std::string& download_dir);

// True for "NAME" or "ORG/NAME" made of the characters HF allows in ids.
bool is_hub_model_id(const std::string& model);

// `model` itself when it exists on disk; else, for a hub id, the snapshot
// directory (or its single .gguf file). NotFound names every place it looked.
StatusOr<std::string> resolve_model_location(const ModelLocationRequest& request,
                                             const HubEnvironment& env);

}  // namespace strata::model
