// Where each routed expert's bytes are on disk, and how they are laid out in a slot. Two kinds of
// source: tensor stacks in a GGUF file (part p of expert e is slice e of the [n_expert] tensor, so
// an expert is 3 reads, 6 with biases) and the blobs of an install directory (one read per expert).
// Built by the model loader (model/expert_binding.cpp), which has validated every shape; this class
// only does the arithmetic of files, offsets, alignment and views.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "install/expert_layout.h"
#include "residency/expert_store.h"
#include "residency/reader_pool.h"

namespace ts {

// One expert's share of one part: a matrix of rows x cols (biases: rows = 1), `bytes` long.
struct ExpertPartInfo {
  std::string tensor;  // the GGUF tensor name, for messages
  GgmlType type = GgmlType::F32;
  int64_t rows = 0, cols = 0;
  uint64_t bytes = 0;  // 0: the part is absent (no biases)
};

struct ExpertLayerFiles {
  std::array<ExpertPartInfo, kExpertParts> part;
  int32_t file = 0;  // index into the source's files
  // Tensor stacks: part p of expert e is at stack_offset[p] + e * part[p].bytes.
  std::array<uint64_t, kExpertParts> stack_offset{};
  // Blobs: when not empty, expert e is the blob at blob_offset[e], laid out by blob_layout().
  std::vector<uint64_t> blob_offset;
  bool is_moe() const { return part[kGate].bytes > 0; }
};

class ExpertSource {
 public:
  // layers: one entry per model layer (non-MoE layers have no parts). Biases must be F32 (they are
  // handed to the backend as float pointers into the slot).
  ExpertSource(std::vector<std::string> files, std::vector<ExpertLayerFiles> layers, int32_t n_expert);

  int64_t n_layer() const { return static_cast<int64_t>(layers_.size()); }
  int32_t n_expert() const { return n_expert_; }
  const ExpertLayerFiles& layer(int64_t l) const { return layers_[l]; }
  const std::vector<std::string>& files() const { return files_; }
  bool is_moe(int64_t l) const { return layers_[l].is_moe(); }

  uint64_t expert_bytes(int64_t l) const;                // the parts' bytes (what the model holds)
  uint64_t total_expert_bytes() const;                   // over every layer and expert
  uint64_t slot_bytes(int64_t l, bool direct) const;     // a slot able to take any expert of the layer
  // Appends the reads that fill `slot` with expert e of layer l; fds are per file, opened with
  // O_DIRECT when `direct` (every offset, length and destination is then page aligned).
  void extents(int64_t l, int32_t e, bool direct, const std::vector<int>& fds, uint8_t* slot,
               std::vector<ReadExtent>& out) const;
  // The expert as it lies in a slot filled by extents().
  ExpertView view(int64_t l, int32_t e, const uint8_t* slot, bool direct) const;
  // The expert in place in the memory-mapped files (maps: per file).
  ExpertView mapped_view(int64_t l, int32_t e, const std::vector<const uint8_t*>& maps) const;
  // "expert 5 of layer 3 ('blk.3.ffn_gate_exps.weight' in 'model.gguf')", for errors.
  std::string describe(int64_t l, int32_t e) const;

 private:
  struct SlotLayout {
    std::array<uint64_t, kExpertParts> region{};  // where each part's read lands in a slot
    uint64_t bytes = 0;
  };
  SlotLayout slot_layout(int64_t l, bool direct) const;
  uint64_t location(int64_t l, int32_t e, int p) const;  // file offset of part p of expert e
  // Where part p's first byte lands inside its region (non-zero only for unaligned O_DIRECT reads).
  uint64_t lead(int64_t l, int32_t e, int p, bool direct) const;
  ExpertView make_view(int64_t l, const std::array<const uint8_t*, kExpertParts>& part) const;

  std::vector<std::string> files_;
  std::vector<ExpertLayerFiles> layers_;
  int32_t n_expert_;
};

}  // namespace ts
