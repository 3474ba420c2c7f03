#include "model/family.h"

#include <array>

#include "util/error.h"

namespace ts {

const Family& family_for(std::string_view arch) {
  const std::array<const Family*, 5> all = {&llama_family(), &qwen3_family(), &qwen3moe_family(), &gpt_oss_family(),
                                           &gemma3_family()};
  for (const Family* f : all)
    if (f->arch == arch) return *f;
  std::string names;
  for (const Family* f : all) names += (names.empty() ? "" : ", ") + std::string(f->arch);
  fail("architecture '{}' is not supported (supported: {})", arch, names);
}

}  // namespace ts
