// The stores behind the seam, on every MoE fixture: every mode hands out the same bytes for every
// expert; a streamed cache of one slot per layer still serves a whole layer; a failed or short read
// is an error naming the file, layer and expert, and its slot is never handed out (nor, later,
// served stale); prefetched experts are hits when they are asked for, a prefetch keeps the
// predicted experts it finds in slots, and one its layer does not ask for stops reading.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "model/model.h"
#include "moe/moe_test_util.h"
#include "residency/slot_filler.h"
#include "residency/stores.h"
#include "support/held_reads.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;
using test::Fixture;

std::string fixture_name(const testing::TestParamInfo<Fixture>& p) { return test::test_name(p.param.name); }

// The bytes of one expert as a store hands it out.
std::vector<uint8_t> expert_bytes(const ExpertView& v) {
  std::vector<uint8_t> b;
  for (const Mat* m : {&v.gate, &v.up, &v.down}) {
    const uint8_t* p = static_cast<const uint8_t*>(m->data);
    b.insert(b.end(), p, p + m->row_stride * static_cast<size_t>(m->rows));
  }
  if (v.gate_bias)
    for (const float* f : {v.gate_bias, v.up_bias, v.down_bias}) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(f);
      b.insert(b.end(), p, p + sizeof(float) * static_cast<size_t>(f == v.down_bias ? v.down.rows : v.gate.rows));
    }
  return b;
}

class Stores : public testing::TestWithParam<Fixture> {
 protected:
  void SetUp() override {
    LoadOptions lo;
    lo.experts.mode = ResidencyMode::Mapped;
    model_ = Model::load(GetParam().gguf(), *be_, lo);
    src_ = model_->expert_source();
  }
  // Every expert of every layer, through `store`, asked for in one call per layer.
  std::vector<std::vector<uint8_t>> all_experts(ExpertStore& store) {
    std::vector<std::vector<uint8_t>> out;
    for (int64_t l = 0; l < src_->n_layer(); ++l) {
      std::vector<int32_t> ids(src_->n_expert());
      for (int32_t e = 0; e < src_->n_expert(); ++e) ids[e] = src_->n_expert() - 1 - e;
      store.request(l, ids);
      std::vector<std::vector<uint8_t>> layer(src_->n_expert());
      int handed = 0;
      while (ExpertLease lease = store.next()) {
        layer[lease.expert()] = expert_bytes(lease.view());
        ++handed;
      }
      EXPECT_EQ(handed, src_->n_expert());
      for (auto& b : layer) out.push_back(std::move(b));
    }
    return out;
  }
  StreamOptions streamed(int32_t slots, bool direct) {
    StreamOptions o;
    o.slots_per_layer = slots;
    o.read.direct_io = direct;
    o.read.chunk_bytes = 4096;  // many chunks per expert, so reads really are split and interleaved
    return o;
  }

  std::unique_ptr<Backend> be_ = make_cpu_backend(2);
  std::unique_ptr<Model> model_;
  std::shared_ptr<const ExpertSource> src_;
};

TEST_P(Stores, EveryModeHandsOutTheSameBytes) {
  const auto want = all_experts(model_->experts());
  for (bool direct : {false, true}) {
    SCOPED_TRACE(direct ? "O_DIRECT" : "buffered");
    ReadOptions ro;
    ro.direct_io = direct;
    ro.chunk_bytes = 8192;
    const auto resident = make_resident_experts(src_, *be_, ro);
    EXPECT_TRUE(resident->resident());
    EXPECT_EQ(all_experts(*resident), want);
    for (int32_t slots : {1, 3, src_->n_expert()}) {
      SCOPED_TRACE(fmt::format("{} slots", slots));
      auto store = make_streamed_experts(src_, *be_, streamed(slots, direct));
      EXPECT_FALSE(store->resident()) << "a slot cache moves experts";
      EXPECT_EQ(all_experts(*store), want);
      EXPECT_EQ(all_experts(*store), want) << "warm";
      const ExpertStats st = store->stats();
      EXPECT_EQ(st.requests, 2 * src_->n_layer() * src_->n_expert());
      if (slots == src_->n_expert()) {
        EXPECT_EQ(st.hits, src_->n_layer() * src_->n_expert()) << "a cache holding every expert hits on the second pass";
      }
      EXPECT_EQ(st.hits + st.reads, st.requests);
    }
  }
}

// The device store takes every expert through the source store's leases and uploads it (on the CPU
// backend an upload is the bytes in place, and the biases are copied): the same bytes, resident.
TEST_P(Stores, DeviceExpertsHoldTheSameBytesAsTheirSource) {
  const auto want = all_experts(model_->experts());
  const auto device = make_device_experts(model_->experts(), *src_, *be_);
  EXPECT_TRUE(device->resident());
  EXPECT_EQ(all_experts(*device), want);
  EXPECT_EQ(all_experts(*device), want) << "second pass";
}

// The device-slot store: every expert packed into pinned host memory in the backend's layout (or
// read from the files into per-slot pinned staging and packed there) and copied into slots on the
// transfer queue (on the CPU backend: the file's layout, host memory and plain copies, so the bytes
// must be the source's). Small caches evict and refill, a lease of a refilled slot sees its new
// expert, and the store says how many leases a layer may hold.
TEST_P(Stores, DeviceSlotsHandOutTheSameBytesAsTheirSource) {
  const auto want = all_experts(model_->experts());
  for (int32_t slots : {1, 3, src_->n_expert()}) {
    for (const char* feed : {"pinned copy", "files", "files, O_DIRECT"}) {
      SCOPED_TRACE(fmt::format("{} slots, {}", slots, feed));
      const bool files = feed[0] == 'f', direct = std::strstr(feed, "O_DIRECT") != nullptr;
      auto store = make_device_streamed_experts(files ? nullptr : &model_->experts(), src_, *be_, streamed(slots, direct));
      EXPECT_FALSE(store->resident());
      EXPECT_EQ(store->lease_limit(0), slots);
      EXPECT_EQ(all_experts(*store), want);
      EXPECT_EQ(all_experts(*store), want) << "warm";
      const ExpertStats st = store->stats();
      EXPECT_EQ(st.requests, 2 * src_->n_layer() * src_->n_expert());
      EXPECT_EQ(st.hits + st.reads, st.requests);
      if (slots == src_->n_expert()) {
        EXPECT_EQ(st.hits, src_->n_layer() * src_->n_expert()) << "a cache holding every expert hits on the second pass";
        uint64_t once = 0;  // every expert copied once: one packed expert per fill
        for (int64_t l = 0; l < src_->n_layer(); ++l)
          if (src_->is_moe(l)) once += device_slot_bytes(*src_, l, *be_) * static_cast<uint64_t>(src_->n_expert());
        if (!files) {
          EXPECT_EQ(st.bytes_read, once);
        }
      } else {
        EXPECT_GT(st.reads, src_->n_layer() * src_->n_expert()) << "a small cache refills slots";
      }
    }
  }
}

// Fails reads that touch [bad_begin, bad_end) of the file while `armed`.
struct FailingReader {
  std::shared_ptr<std::atomic<bool>> armed = std::make_shared<std::atomic<bool>>(true);
  uint64_t bad_begin = 0, bad_end = 0;
  ReaderPool::ReadFn fn() const {
    return [a = armed, b = bad_begin, e = bad_end](int fd, void* buf, size_t n, uint64_t off) -> ssize_t {
      if (*a && off < e && off + n > b) {
        errno = EIO;
        return -1;
      }
      return ::pread(fd, buf, n, static_cast<off_t>(off));
    };
  }
};

TEST_P(Stores, AFailedReadNamesTheExpertAndItsSlotIsNeverHandedOut) {
  const int64_t layer = src_->n_layer() - 1;
  const int32_t bad = 2;
  // Fail only the last chunk of the bad expert's down projection: the rest of its slot is filled,
  // which is exactly the half-filled slot that must not be computed from.
  const ExpertLayerFiles& lf = src_->layer(layer);
  const uint64_t down_end = lf.stack_offset[kDown] + static_cast<uint64_t>(bad + 1) * lf.part[kDown].bytes;
  FailingReader fr;
  fr.bad_begin = down_end - 1;
  fr.bad_end = down_end;
  StreamOptions o = streamed(4, false);
  o.read.read = fr.fn();
  const auto want = all_experts(model_->experts());
  for (bool device : {false, true}) {  // host slots, and device slots fed from the files
    SCOPED_TRACE(device ? "device slots" : "host slots");
    *fr.armed = true;
    auto store = device ? make_device_streamed_experts(nullptr, src_, *be_, o) : make_streamed_experts(src_, *be_, o);
    store->request(layer, std::vector<int32_t>{0, bad, 1});
    std::vector<int32_t> handed;
    try {
      while (ExpertLease l = store->next()) handed.push_back(l.expert());
      FAIL() << "the failed read was not reported";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(fmt::format("expert {} of layer {}", bad, layer)));
      EXPECT_THAT(e.what(), HasSubstr(GetParam().gguf()));
      EXPECT_THAT(e.what(), HasSubstr(std::strerror(EIO)));
    }
    EXPECT_THAT(handed, ::testing::Not(::testing::Contains(bad)));

    // The slot was left empty: once the file reads again, the expert is read afresh, whole.
    *fr.armed = false;
    store->request(layer, std::vector<int32_t>{bad});
    ExpertLease l = store->next();
    ASSERT_TRUE(l);
    EXPECT_EQ(expert_bytes(l.view()), want[layer * src_->n_expert() + bad]);
    l.release();
    EXPECT_FALSE(store->next());
    EXPECT_EQ(store->stats().reads, 4) << "0, bad, 1 and bad again";
  }
}

TEST_P(Stores, AShortReadOfATruncatedFileNamesTheFile) {
  // A copy of the model, truncated inside the last expert of the last layer after it was opened.
  test::ScratchDir dir;
  const std::string copy = dir.file("model.gguf");
  std::filesystem::copy_file(GetParam().gguf(), copy);
  LoadOptions lo;
  lo.experts.mode = ResidencyMode::Streamed;
  lo.experts.cache_slots = 2;
  auto m = Model::load(copy, *be_, lo);
  const int64_t layer = src_->n_layer() - 1;
  const int32_t last = src_->n_expert() - 1;
  const uint64_t end = src_->layer(layer).stack_offset[kDown] + static_cast<uint64_t>(src_->n_expert()) * src_->layer(layer).part[kDown].bytes;
  // Past the down projections only biases (gpt-oss) or other tensors follow: cut inside the last down.
  std::filesystem::resize_file(copy, end - 16);
  m->experts().request(layer, std::vector<int32_t>{last});
  try {
    while (ExpertLease l = m->experts().next()) ADD_FAILURE() << "expert " << l.expert() << " handed out from a short read";
    FAIL() << "the short read was not reported";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("expert {} of layer {}", last, layer)));
    EXPECT_THAT(e.what(), HasSubstr(copy));
    EXPECT_THAT(e.what(), HasSubstr("short read"));
  }
}

TEST_P(Stores, EveryLeasedSlotIsAnErrorNotAHang) {
  auto store = make_streamed_experts(src_, *be_, streamed(1, false));
  store->request(0, std::vector<int32_t>{0, 1});
  ExpertLease held = store->next();
  ASSERT_TRUE(held);
  EXPECT_THROW(store->next(), Error);  // the only slot is leased: expert 1 can never be placed
}

TEST_P(Stores, PrefetchedExpertsAreHitsAndWrongGuessesAreCounted) {
  StreamOptions o = streamed(4, false);
  o.prefetch = true;
  o.read.threads = 1;  // reads complete in submission order: once 5 is in, so is the prefetched 3
  auto store = make_streamed_experts(src_, *be_, o);
  const auto want = all_experts(model_->experts());
  ASSERT_TRUE(store->wants_prefetch());
  store->prefetch(1, std::vector<int32_t>{3, 5});
  store->request(1, std::vector<int32_t>{5, 6});
  std::vector<int32_t> got;
  while (ExpertLease l = store->next()) {
    EXPECT_EQ(expert_bytes(l.view()), want[1 * src_->n_expert() + l.expert()]);
    got.push_back(l.expert());
  }
  EXPECT_THAT(got, ::testing::UnorderedElementsAre(5, 6));
  ExpertStats st = store->stats();
  EXPECT_EQ(st.prefetch_reads, 2);
  EXPECT_EQ(st.hits, 1);
  EXPECT_EQ(st.prefetch_hits, 1);
  EXPECT_EQ(st.reads, 1);
  // Expert 3 was never used: stopped if it was still being read when its layer asked for 5 and 6,
  // or else pushed out below as a wasted prefetch; counted once either way.
  store->request(1, std::vector<int32_t>{0, 1, 2});
  while (store->next()) {
  }
  st = store->stats();
  EXPECT_EQ(st.prefetch_wasted + st.prefetch_cancelled, 1);
}

// A prediction names experts already in a slot as well as missing ones: reading the missing ones
// never evicts the present ones (LFU alone would evict the least used, here the predicted expert 1).
TEST_P(Stores, APrefetchNeverEvictsAnExpertItPredicts) {
  StreamOptions o = streamed(2, false);
  o.prefetch = true;
  auto store = make_streamed_experts(src_, *be_, o);
  const auto serve = [&](std::vector<int32_t> ids) {
    store->request(1, ids);
    while (store->next()) {
    }
  };
  serve({0, 1});
  serve({0});  // expert 0 used twice, expert 1 once: 1 is the least used
  store->prefetch(1, std::vector<int32_t>{1, 2});
  ExpertStats st = store->stats();
  EXPECT_EQ(st.prefetch_reads, 1) << "expert 2 only";
  serve({1, 2});
  const ExpertStats after = store->stats();
  EXPECT_EQ(after.hits - st.hits, 2) << "both predicted experts are in slots";
  EXPECT_EQ(after.prefetch_hits - st.prefetch_hits, 1);
  EXPECT_EQ(after.reads, st.reads);
}

// Prefetches their layer does not ask for stop reading: the chunk in flight finishes (expert 3's
// first), the rest is never read (expert 4 not at all), the slots are emptied (the experts are read
// afresh and whole when asked for), and the bytes counted are only those read. Host slots, and
// device slots fed from the files.
TEST_P(Stores, AWrongPrefetchStopsReading) {
  const auto want = all_experts(model_->experts());
  for (bool device : {false, true}) {
    SCOPED_TRACE(device ? "device slots" : "host slots");
    test::HeldReads held;
    StreamOptions o = streamed(4, false);
    o.prefetch = true;
    o.read.threads = 1;
    o.read.read = held.fn();
    auto store = device ? make_device_streamed_experts(nullptr, src_, *be_, o) : make_streamed_experts(src_, *be_, o);
    store->prefetch(1, std::vector<int32_t>{3, 4});
    held.wait_entered(1);  // the prefetch of 3 has a chunk being read
    const uint64_t one = store->stats().bytes_read / 2;  // one expert's read, as counted when it starts
    store->request(1, std::vector<int32_t>{5});
    held.release();
    std::vector<int32_t> got;
    while (ExpertLease l = store->next()) got.push_back(l.expert());
    EXPECT_THAT(got, ::testing::ElementsAre(5));
    ExpertStats st = store->stats();
    EXPECT_EQ(st.prefetch_reads, 2);
    EXPECT_EQ(st.prefetch_cancelled, 2);
    EXPECT_GT(st.bytes_read, one) << "expert 5 and the prefetch's first chunk";
    EXPECT_LE(st.bytes_read, one + o.read.chunk_bytes);
    store->request(1, std::vector<int32_t>{3, 4});
    got.clear();
    while (ExpertLease l = store->next()) {
      EXPECT_EQ(expert_bytes(l.view()), want[1 * src_->n_expert() + l.expert()]);
      got.push_back(l.expert());
    }
    EXPECT_THAT(got, ::testing::UnorderedElementsAre(3, 4));
    st = store->stats();
    EXPECT_EQ(st.reads, 3) << "5, then 3 and 4 afresh";
    EXPECT_EQ(st.prefetch_hits, 0);
  }
}

// An expert asked for again while a chunk of its cancelled read is still landing in its old slot:
// read afresh into another slot (never served from, nor failed with, the cancelled read).
TEST_P(Stores, AnExpertAskedForWhileItsCancelledReadLandsIsReadAfresh) {
  const auto want = all_experts(model_->experts());
  test::HeldReads held;
  StreamOptions o = streamed(4, false);
  o.prefetch = true;
  o.read.threads = 1;
  o.read.read = held.fn();
  auto store = make_streamed_experts(src_, *be_, o);
  store->prefetch(1, std::vector<int32_t>{3});
  held.wait_entered(1);
  store->request(1, std::vector<int32_t>{5});     // cancels the prefetch of 3, a chunk in flight
  store->prefetch(1, std::vector<int32_t>{3});    // predicted again: a new read, in another slot
  store->request(1, std::vector<int32_t>{3, 5});  // the call is asked again, with 3
  held.release();
  std::vector<int32_t> got;
  while (ExpertLease l = store->next()) {
    EXPECT_EQ(expert_bytes(l.view()), want[1 * src_->n_expert() + l.expert()]);
    got.push_back(l.expert());
  }
  EXPECT_THAT(got, ::testing::UnorderedElementsAre(3, 5));
  const ExpertStats st = store->stats();
  EXPECT_EQ(st.prefetch_cancelled, 1);
  EXPECT_EQ(st.prefetch_reads, 2);
  EXPECT_EQ(st.prefetch_hits, 1);
}

TEST_P(Stores, ADemandReadWaitsForPrefetchesThatFillEverySlot) {
  StreamOptions o = streamed(2, false);
  o.prefetch = true;
  o.read.chunk_bytes = 1 << 20;
  // Slow reads: the prefetches are still in flight when the layer asks for something else.
  o.read.read = [](int fd, void* buf, size_t n, uint64_t off) -> ssize_t {
    ::usleep(20000);
    return ::pread(fd, buf, n, static_cast<off_t>(off));
  };
  auto store = make_streamed_experts(src_, *be_, o);
  const auto want = all_experts(model_->experts());
  store->prefetch(0, std::vector<int32_t>{0, 1});
  store->request(0, std::vector<int32_t>{2});
  ExpertLease l = store->next();
  ASSERT_TRUE(l);
  EXPECT_EQ(l.expert(), 2);
  EXPECT_EQ(expert_bytes(l.view()), want[2]);
}

INSTANTIATE_TEST_SUITE_P(Models, Stores, testing::ValuesIn(test::moe_fixtures()), fixture_name);

}  // namespace
}  // namespace ts
