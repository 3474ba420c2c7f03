#include "residency/expert_source.h"

#include "util/error.h"

namespace ts {

ExpertSource::ExpertSource(std::vector<std::string> files, std::vector<ExpertLayerFiles> layers, int32_t n_expert)
    : files_(std::move(files)), layers_(std::move(layers)), n_expert_(n_expert) {
  for (const ExpertLayerFiles& l : layers_) {
    if (!l.is_moe()) continue;
    if (l.file < 0 || l.file >= static_cast<int32_t>(files_.size())) fail("internal error: expert file index {}", l.file);
    if (!l.blob_offset.empty() && static_cast<int32_t>(l.blob_offset.size()) != n_expert)
      fail("internal error: {} blob offsets for {} experts", l.blob_offset.size(), n_expert);
    for (int p = kGateBias; p <= kDownBias; ++p)
      if (l.part[p].bytes && l.part[p].type != GgmlType::F32)
        fail("'{}': expert bias tensor '{}' has type {}; streamed and resident experts need F32 biases",
             files_[l.file], l.part[p].tensor, type_name(l.part[p].type));
  }
}

uint64_t ExpertSource::expert_bytes(int64_t l) const {
  uint64_t b = 0;
  for (const ExpertPartInfo& p : layers_[l].part) b += p.bytes;
  return b;
}

uint64_t ExpertSource::total_expert_bytes() const {
  uint64_t b = 0;
  for (int64_t l = 0; l < n_layer(); ++l) b += expert_bytes(l) * static_cast<uint64_t>(n_expert_);
  return b;
}

ExpertSource::SlotLayout ExpertSource::slot_layout(int64_t l, bool direct) const {
  const ExpertLayerFiles& lf = layers_[l];
  std::array<uint64_t, kExpertParts> bytes{};
  for (int p = 0; p < kExpertParts; ++p) bytes[p] = lf.part[p].bytes;
  // Blobs are page aligned in the file already; an unaligned tensor slice read with O_DIRECT covers
  // whole pages around it, up to a page more than the part.
  if (direct && lf.blob_offset.empty())
    for (int p = 0; p < kExpertParts; ++p)
      if (bytes[p]) bytes[p] = align_up(bytes[p], kBlobAlign) + kBlobAlign;
  const BlobLayout b = blob_layout(bytes);
  return SlotLayout{b.offset, b.bytes};
}

uint64_t ExpertSource::slot_bytes(int64_t l, bool direct) const { return slot_layout(l, direct).bytes; }

uint64_t ExpertSource::location(int64_t l, int32_t e, int p) const {
  const ExpertLayerFiles& lf = layers_[l];
  if (!lf.blob_offset.empty()) {
    std::array<uint64_t, kExpertParts> bytes{};
    for (int q = 0; q < kExpertParts; ++q) bytes[q] = lf.part[q].bytes;
    return lf.blob_offset[e] + blob_layout(bytes).offset[p];
  }
  return lf.stack_offset[p] + static_cast<uint64_t>(e) * lf.part[p].bytes;
}

uint64_t ExpertSource::lead(int64_t l, int32_t e, int p, bool direct) const {
  return direct && layers_[l].blob_offset.empty() ? location(l, e, p) % kBlobAlign : 0;
}

void ExpertSource::extents(int64_t l, int32_t e, bool direct, const std::vector<int>& fds, uint8_t* slot,
                           std::vector<ReadExtent>& out) const {
  const ExpertLayerFiles& lf = layers_[l];
  const int fd = fds[lf.file];
  const std::string* path = &files_[lf.file];
  if (!lf.blob_offset.empty()) {
    const uint64_t bytes = slot_layout(l, direct).bytes;
    out.push_back(ReadExtent{fd, path, lf.blob_offset[e], bytes, bytes, slot});
    return;
  }
  const SlotLayout s = slot_layout(l, direct);
  for (int p = 0; p < kExpertParts; ++p) {
    const uint64_t n = lf.part[p].bytes;
    if (!n) continue;
    const uint64_t at = location(l, e, p), lead_bytes = lead(l, e, p, direct);
    const uint64_t len = direct ? align_up(lead_bytes + n, kBlobAlign) : n;
    out.push_back(ReadExtent{fd, path, at - lead_bytes, len, lead_bytes + n, slot + s.region[p]});
  }
}

ExpertView ExpertSource::make_view(int64_t l, const std::array<const uint8_t*, kExpertParts>& part) const {
  const ExpertLayerFiles& lf = layers_[l];
  auto mat = [&](int p) {
    const ExpertPartInfo& i = lf.part[p];
    return Mat{i.type, part[p], i.rows, i.cols, row_bytes(i.type, i.cols)};
  };
  ExpertView v;
  v.gate = mat(kGate);
  v.up = mat(kUp);
  v.down = mat(kDown);
  if (lf.part[kGateBias].bytes) {
    v.gate_bias = reinterpret_cast<const float*>(part[kGateBias]);
    v.up_bias = reinterpret_cast<const float*>(part[kUpBias]);
    v.down_bias = reinterpret_cast<const float*>(part[kDownBias]);
  }
  return v;
}

ExpertView ExpertSource::view(int64_t l, int32_t e, const uint8_t* slot, bool direct) const {
  const SlotLayout s = slot_layout(l, direct);
  std::array<const uint8_t*, kExpertParts> part{};
  for (int p = 0; p < kExpertParts; ++p) part[p] = slot + s.region[p] + lead(l, e, p, direct);
  return make_view(l, part);
}

ExpertView ExpertSource::mapped_view(int64_t l, int32_t e, const std::vector<const uint8_t*>& maps) const {
  std::array<const uint8_t*, kExpertParts> part{};
  for (int p = 0; p < kExpertParts; ++p) part[p] = maps[layers_[l].file] + location(l, e, p);
  return make_view(l, part);
}

std::string ExpertSource::describe(int64_t l, int32_t e) const {
  return fmt::format("expert {} of layer {} (in '{}')", e, l, files_[layers_[l].file]);
}

}  // namespace ts
