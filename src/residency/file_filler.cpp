// The file filler: an expert's parts are pread from the source's files straight into a host slot
// by the reader pool (buffered, or O_DIRECT), in the file's layout.
#include "residency/expert_files.h"
#include "residency/slot_filler.h"
#include "residency/stores.h"

namespace ts {
namespace {

class FileFiller final : public SlotFiller {
 public:
  FileFiller(std::shared_ptr<const ExpertSource> src, const ReadOptions& o)
      : src_(std::move(src)), direct_(o.direct_io), files_(src_->files(), o.direct_io),
        pool_(o.threads, o.chunk_bytes, o.read) {}

  MemKind memory() const override { return MemKind::Host; }
  uint64_t slot_bytes(int64_t layer) const override { return src_->slot_bytes(layer, direct_); }
  bool fill(int64_t layer, int32_t e, int32_t slot, uint8_t* at, ReaderPool::Priority priority, Done done,
            uint64_t& bytes) override {
    extents_.clear();
    src_->extents(layer, e, direct_, files_.fds(), at, extents_);
    for (const ReadExtent& x : extents_) bytes += x.bytes;
    job(layer, slot) = pool_.submit(extents_, std::move(done), priority);
    return false;
  }
  ReaderPool::Cancel cancel(int64_t layer, int32_t slot, uint64_t& unread) override {
    return pool_.cancel(job(layer, slot), unread);
  }
  ExpertView view(int64_t layer, int32_t e, const uint8_t* at) const override { return src_->view(layer, e, at, direct_); }

 private:
  ReaderPool::JobRef& job(int64_t layer, int32_t slot) {
    if (jobs_.size() <= static_cast<size_t>(layer)) jobs_.resize(layer + 1);
    if (jobs_[layer].size() <= static_cast<size_t>(slot)) jobs_[layer].resize(slot + 1);
    return jobs_[layer][slot];
  }

  std::shared_ptr<const ExpertSource> src_;
  bool direct_;
  ExpertFiles files_;
  std::vector<std::vector<ReaderPool::JobRef>> jobs_;  // [layer][slot]: the slot's latest read
  std::vector<ReadExtent> extents_;
  ReaderPool pool_;  // last: destroyed first, so reads in flight finish while the files are open
};

}  // namespace

std::unique_ptr<SlotFiller> make_file_filler(std::shared_ptr<const ExpertSource> src, const ReadOptions& o) {
  return std::make_unique<FileFiller>(std::move(src), o);
}

}  // namespace ts
