#include "model/expert_binding.h"

#include <sys/mman.h>
#include <unistd.h>

#include "model/memory_estimate.h"
#include "model/tensor_binding.h"
#include "residency/slot_filler.h"
#include "util/error.h"
#include "util/sys_memory.h"

namespace ts {

std::shared_ptr<const ExpertSource> expert_source_from_gguf(const GgufFile& g, const HParams& h, const Family& f) {
  const uint64_t E = static_cast<uint64_t>(h.n_embd), F = static_cast<uint64_t>(h.n_ff_expert);
  const uint64_t X = static_cast<uint64_t>(h.n_expert);
  std::vector<ExpertLayerFiles> layers(h.n_layer);
  const int n_parts = f.expert_bias ? kExpertParts : 3;
  for (int64_t l = 0; l < h.n_layer; ++l) {
    for (int p = 0; p < n_parts; ++p) {
      const bool down = p == kDown || p == kDownBias;
      const std::string name = expert_tensor_name(l, p);
      const GgufTensor& t = p < 3 ? check_tensor(g, name, {down ? F : E, down ? E : F, X})
                                  : check_tensor(g, name, {down ? E : F, X});
      ExpertPartInfo& part = layers[l].part[p];
      part.tensor = name;
      part.type = t.type;
      part.rows = p < 3 ? static_cast<int64_t>(down ? E : F) : 1;
      part.cols = static_cast<int64_t>(t.dims[0]);
      part.bytes = t.row_bytes() * static_cast<uint64_t>(part.rows);
      layers[l].stack_offset[p] = g.data_offset() + t.offset;
    }
  }
  return std::make_shared<ExpertSource>(std::vector<std::string>{g.path()}, std::move(layers), static_cast<int32_t>(X));
}

std::shared_ptr<const ExpertSource> expert_source_from_install(const InstallManifest& m, const HParams& h, const Family& f) {
  const uint64_t E = static_cast<uint64_t>(h.n_embd), F = static_cast<uint64_t>(h.n_ff_expert);
  const std::string mpath = m.path(kManifestName);
  if (m.architecture != h.arch) fail("'{}' is for {}, but its resident tensors are {}", mpath, m.architecture, h.arch);
  if (m.n_expert != h.n_expert) fail("'{}' holds {} experts per layer, the model has {}", mpath, m.n_expert, h.n_expert);
  std::vector<ExpertLayerFiles> layers(h.n_layer);
  std::vector<std::string> files;
  for (const InstallLayer& il : m.layers) {
    if (il.layer < 0 || il.layer >= h.n_layer || layers[il.layer].is_moe())
      fail("'{}': layer {} is out of range or listed twice", mpath, il.layer);
    ExpertLayerFiles& lf = layers[il.layer];
    for (int p = 0; p < kExpertParts; ++p) {
      const InstallPart& ip = il.parts[p];
      const bool down = p == kDown || p == kDownBias;
      if (p >= kGateBias && !f.expert_bias) {
        if (ip.bytes) fail("'{}': layer {} has expert biases, which the {} family does not use", mpath, il.layer, h.arch);
        continue;
      }
      if (!ip.bytes) fail("'{}': layer {} has no {} part", mpath, il.layer, expert_part_name(p));
      check_shape(mpath, ip.tensor, ip.type, ip.dims, p < 3 ? std::vector<uint64_t>{down ? F : E, down ? E : F} : std::vector<uint64_t>{down ? E : F});
      ExpertPartInfo& part = lf.part[p];
      part.tensor = ip.tensor;
      part.type = ip.type;
      part.rows = p < 3 ? static_cast<int64_t>(down ? E : F) : 1;
      part.cols = static_cast<int64_t>(ip.dims[0]);
      part.bytes = ip.bytes;
    }
    lf.file = static_cast<int32_t>(files.size());
    files.push_back(m.path(il.file));
    lf.blob_offset = il.offsets;
  }
  for (int64_t l = 0; l < h.n_layer; ++l)
    if (!layers[l].is_moe()) fail("'{}' has no experts for layer {}", mpath, l);
  return std::make_shared<ExpertSource>(std::move(files), std::move(layers), static_cast<int32_t>(m.n_expert));
}

void prefault_resident_core(const GgufFile& g) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (const GgufTensor& t : g.tensors()) {
    if (is_expert_tensor_name(t.name) || t.n_bytes == 0) continue;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(t.data) / page * page;
    const uintptr_t end = reinterpret_cast<uintptr_t>(t.data) + t.n_bytes;
    // A hint: where the kernel refuses it (older than 5.14), pages come in on first use as before.
    if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) != 0)
      ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);
  }
}

BoundExperts bind_experts(std::shared_ptr<const ExpertSource> src, const GgufFile& g, uint64_t resident_core,
                          const HParams& h, Activation expert_activation, const ResidencyOptions& o, const RunShape& run,
                          Backend& be) {
  // The same sum as check_run_memory's, so that a cache sized to the budget passes the check: what
  // the process holds now, the resident core, the run's buffers, the slack, and the experts' memory.
  MemoryEstimate e = estimate_run_memory(h, resident_core, run.n_ctx, run.batch, run.logit_rows);
  const uint64_t rss = current_rss_bytes();
  const MemoryLimits limits = read_memory_limits();
  ResidencyNeeds needs;
  needs.resident_core = resident_core;
  needs.runtime = e.buffers() + kRunSlack + rss;
  needs.budget = o.memory_budget ? o.memory_budget : limits.budget(rss);
  BoundExperts b;
  // A device backend holds the experts in its own memory: they are uploaded from the mapped files
  // and take no host memory beyond the page cache.
  const bool device = be.weight_memory() == MemKind::Device;
  uint64_t device_slot_row = 0;  // one device slot in every MoE layer
  if (device)
    for (int64_t l = 0; l < src->n_layer(); ++l)
      if (src->is_moe(l)) device_slot_row += device_slot_bytes(*src, l, be);
  const uint64_t host_room = needs.budget > needs.runtime ? needs.budget - needs.runtime : 0;
  // The mapped store reads the experts where they lie: in the model's own map for a GGUF source, in
  // maps of the layer files for an install. A device backend uploads from them.
  std::vector<const uint8_t*> maps;
  const auto map_files = [&] {
    for (const std::string& path : src->files()) {
      if (path == g.path()) {
        maps.push_back(g.file().data());
      } else {
        b.maps.push_back(std::make_unique<MappedFile>(path));
        maps.push_back(b.maps.back()->data());
      }
    }
  };
  if (device) {
    map_files();
    int64_t first = 0;  // the first MoE layer: every expert of the model has its format and shape
    while (first < src->n_layer() && !src->is_moe(first)) ++first;
    const bool host_computes =
        first < src->n_layer() && be.computes_on_host(src->mapped_view(first, 0, maps), expert_activation, 1);
    b.choice = choose_device_residency(o, *src, device_slot_row, host_room, host_computes);
  } else {
    b.choice = choose_residency(o, *src, needs);
    if (b.choice.mode == ResidencyMode::Mapped) map_files();
  }
  // Explicit modes and cache sizes are not fitted to the budget: refuse them here, before the store
  // reads or allocates anything, if the system cannot hold them.
  if (!device && b.choice.mode != ResidencyMode::Mapped) e.experts = b.choice.expert_memory;
  check_run_memory(e, limits, rss, current_vm_bytes());
  b.source = src;
  if (device) {
    const std::unique_ptr<ExpertStore> mapped = make_mapped_experts(src, maps);
    if (b.choice.mode == ResidencyMode::Streamed) {
      StreamOptions so;
      so.slots_per_layer = b.choice.slots_per_layer;
      so.policy = o.policy;
      so.prefetch = b.choice.prefetch;
      so.host_share = b.choice.host_share;
      so.read = o.read;
      b.store = make_device_streamed_experts(b.choice.device_from_files ? nullptr : mapped.get(), src, be, so);
    } else {
      b.store = make_device_experts(*mapped, *src, be);
    }
    b.maps.clear();  // the experts are in device (or pinned host) memory now: the files need not stay mapped
  } else {
    b.store = make_expert_store(b.choice, o, std::move(src), be, maps);
  }
  return b;
}

}  // namespace ts
