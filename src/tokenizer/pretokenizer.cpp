// Pre-tokenizer regexes by name. Aliases follow llama.cpp's mapping of tokenizer.ggml.pre values.
#include "tokenizer/pretokenizer.h"

#include <map>

#include "util/error.h"

namespace ts {

namespace {

// GPT-2 (also the second stage of several code models).
const char* const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

// Llama 3 and cl100k_base.
const char* const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: as Llama 3 but single digits.
const char* const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// o200k_base (GPT-4o, gpt-oss, Llama 4).
const char* const kO200k =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Preset {
  std::vector<std::string> patterns;
  bool ignore_merges = false;
  bool add_bos = false;
};

const std::map<std::string, Preset, std::less<>>& presets() {
  static const std::map<std::string, Preset, std::less<>> table = [] {
    const Preset gpt2{{kGpt2}};
    const Preset llama3{{kLlama3}, true, true};
    const Preset cl100k{{kLlama3}};
    const Preset qwen2{{kQwen2}};
    const Preset o200k{{kO200k}};
    const Preset digits_then_gpt2{{R"(\p{N})", kGpt2}};
    // llama.cpp's "default" (BPE vocabulary converted without a recognised pre-tokenizer).
    const Preset fallback{{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}};
    const Preset falcon{{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}};
    const Preset deepseek_llm{{
        "[\r\n]",
        // DeepSeek LLM's letter ranges (from its tokenizer.json)
        "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}"
        "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}"
        "\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"
        "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"
        "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
        "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
        "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
        "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}"
        "\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"
        "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}"
        "\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}"
        "\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"
        "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
        "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
        "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
        "\\x{1E900}-\\x{1E943}]+",
        "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
        "\\s+$",
        "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+",
        "\\p{N}+",
    }};
    const Preset deepseek_coder{{"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"}};

    std::map<std::string, Preset, std::less<>> t;
    t["default"] = fallback;
    for (const char* n : {"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de", "jina-v1-en",
                          "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe", "gigachat", "exaone4",
                          "trillion", "granite-docling"})
      t[n] = gpt2;
    for (const char* n : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "lfm2"}) t[n] = llama3;
    for (const char* n : {"cl100k", "cl100k_base", "dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}) t[n] = cl100k;
    for (const char* n : {"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", "hunyuan"}) t[n] = qwen2;
    for (const char* n : {"gpt-4o", "o200k", "o200k_base", "llama4"}) t[n] = o200k;
    for (const char* n : {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"})
      t[n] = digits_then_gpt2;
    t["falcon"] = falcon;
    t["deepseek-llm"] = deepseek_llm;
    t["deepseek-coder"] = deepseek_coder;
    // tiktoken's rank-ordered BPE always emits a piece that is a token whole.
    for (const char* n : {"o200k_base", "cl100k_base"}) t[n].ignore_merges = true;
    return t;
  }();
  return table;
}

}  // namespace

std::unique_ptr<PreTokenizer> PreTokenizer::by_name(std::string_view name) {
  const auto& table = presets();
  const auto it = table.find(name);
  if (it == table.end()) fail("unknown pre-tokenizer '{}' (tokenizer.ggml.pre); it needs its regexes added", name);
  auto pre = std::make_unique<PreTokenizer>();
  for (const std::string& p : it->second.patterns) pre->patterns.push_back(std::make_unique<Regex>(p));
  pre->ignore_merges = it->second.ignore_merges;
  pre->add_bos = it->second.add_bos;
  return pre;
}

}  // namespace ts
