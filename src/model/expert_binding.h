// Binding a model's routed experts: the expert tensors are checked against the hyper-parameters
// (a wrong shape or type is a load error naming the tensor), described as an ExpertSource, and
// served by the store the residency options choose (model/model.cpp keeps the result).
#pragma once
#include <cstdint>
#include <memory>

#include "gguf/gguf.h"
#include "install/manifest.h"
#include "model/family.h"
#include "model/hparams.h"
#include "residency/residency.h"

namespace ts {

struct BoundExperts {
  std::shared_ptr<const ExpertSource> source;
  ResidencyChoice choice;
  std::vector<std::unique_ptr<MappedFile>> maps;  // mapped mode: the source's files other than the GGUF
  std::unique_ptr<ExpertStore> store;             // last: it may point into the maps
};

// The run that will use the model, for the auto residency's budget.
struct RunShape {
  int64_t n_ctx = 4096;
  int64_t batch = 256;
  int64_t logit_rows = 1;  // rows of logits the caller keeps on the host
};

// Experts stored as tensor stacks in the model's GGUF.
std::shared_ptr<const ExpertSource> expert_source_from_gguf(const GgufFile& g, const HParams& h, const Family& f);
// Experts stored as blobs in an install directory (every MoE layer must be there, shaped as `h` says).
std::shared_ptr<const ExpertSource> expert_source_from_install(const InstallManifest& m, const HParams& h, const Family& f);

// Reads an MoE model's resident tensors (everything but the experts) into memory now, in one pass
// at disk speed, instead of page by page during the first tokens: every token uses all of them.
void prefault_resident_core(const GgufFile& g);

// Chooses the residency (the budget: o.memory_budget, else the cgroup limit and MemAvailable) and
// builds the store. resident_core: the bytes of the weights that stay mapped.
BoundExperts bind_experts(std::shared_ptr<const ExpertSource> src, const GgufFile& g, uint64_t resident_core,
                          const HParams& h, Activation expert_activation, const ResidencyOptions& o, const RunShape& run,
                          Backend& be);

}  // namespace ts
