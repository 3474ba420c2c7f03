// How `auto` and `streamed` size the expert store from the memory budget (residency/residency.h):
// resident when every expert fits beside the resident weights and the run; otherwise the largest
// cache that fits; a refusal with the sizes when not even one slot per layer fits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "residency/residency.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 4 layers of 8 experts, each expert exactly 3 pages (so a slot is 12 KiB), read from one file.
ExpertSource source() {
  std::vector<ExpertLayerFiles> layers(4);
  for (auto& l : layers)
    for (int p = 0; p < 3; ++p) l.part[p] = ExpertPartInfo{"t", GgmlType::Q8_0, 1, 32, 4096};
  return ExpertSource({"model.gguf"}, layers, 8);
}
constexpr uint64_t kSlotRow = 4 * 12288;  // one slot in each of the 4 layers
constexpr uint64_t kAll = 8 * kSlotRow;

ResidencyNeeds needs(uint64_t budget) { return ResidencyNeeds{budget, 100000, 50000}; }

TEST(ResidencyChoice, AutoIsResidentWhenEveryExpertFits) {
  ResidencyOptions o;
  const ResidencyChoice c = choose_residency(o, source(), needs(150000 + kAll));
  EXPECT_EQ(c.mode, ResidencyMode::Resident);
  EXPECT_EQ(c.expert_memory, kAll);
}

TEST(ResidencyChoice, AutoStreamsThroughTheLargestCacheThatFits) {
  ResidencyOptions o;
  const ResidencyChoice c = choose_residency(o, source(), needs(150000 + kAll - 1));
  EXPECT_EQ(c.mode, ResidencyMode::Streamed);
  EXPECT_EQ(c.slots_per_layer, 7);
  EXPECT_EQ(c.expert_memory, 7 * kSlotRow);
  EXPECT_EQ(choose_residency(o, source(), needs(150000 + 3 * kSlotRow + 5)).slots_per_layer, 3);
}

TEST(ResidencyChoice, ABudgetBelowOneSlotPerLayerIsRefusedWithTheSizes) {
  ResidencyOptions o;
  try {
    choose_residency(o, source(), needs(150000 + kSlotRow - 1));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("one expert-cache slot per layer needs 48.0 KiB"));
    EXPECT_THAT(e.what(), HasSubstr("minus"));
  }
}

TEST(ResidencyChoice, StreamedSizesFromSlotsOrMegabytesOrTheBudget) {
  ResidencyOptions o;
  o.mode = ResidencyMode::Streamed;
  EXPECT_EQ(choose_residency(o, source(), needs(150000 + kAll)).slots_per_layer, 8) << "budget, capped at every expert";
  o.cache_slots = 3;
  EXPECT_EQ(choose_residency(o, source(), needs(0)).slots_per_layer, 3) << "explicit slots ignore the budget";
  o.cache_slots = 100;
  EXPECT_EQ(choose_residency(o, source(), needs(0)).slots_per_layer, 8);
  o.cache_slots = 0;
  o.cache_bytes = 2 * kSlotRow + 1;
  EXPECT_EQ(choose_residency(o, source(), needs(0)).slots_per_layer, 2);
  o.cache_bytes = kSlotRow - 1;
  EXPECT_THROW(choose_residency(o, source(), needs(0)), Error);
}

// Prefetch `auto` is on only for a cache of at most half of each layer's experts (the regime where
// docs/RESIDENCY.md measured it to win); `on` and `off` are kept; nothing but a streamed store
// prefetches.
TEST(ResidencyChoice, AutoPrefetchIsOnForCachesOfAtMostHalfTheExperts) {
  ResidencyOptions o;
  o.mode = ResidencyMode::Streamed;
  o.cache_slots = 4;
  const ResidencyChoice half = choose_residency(o, source(), needs(0));
  EXPECT_TRUE(half.prefetch);
  EXPECT_THAT(half.summary, HasSubstr(", prefetch)"));
  o.cache_slots = 5;
  EXPECT_FALSE(choose_residency(o, source(), needs(0)).prefetch);
  o.prefetch = PrefetchMode::On;
  EXPECT_TRUE(choose_residency(o, source(), needs(0)).prefetch);
  o.cache_slots = 2;
  o.prefetch = PrefetchMode::Off;
  EXPECT_FALSE(choose_residency(o, source(), needs(0)).prefetch);
  o = ResidencyOptions{};
  EXPECT_FALSE(choose_residency(o, source(), needs(150000 + kAll)).prefetch) << "resident";
}

// A device backend uploads every expert by default (its kernels cannot read mapped or host-slot
// memory); the host budget does not apply. Streamed sizes a cache of device slots from
// --expert-cache-mb over the device slot bytes; mapped is refused, saying why.
TEST(ResidencyChoice, ADeviceBackendHoldsEveryExpertOrStreamsThemIntoDeviceSlots) {
  const uint64_t row = 3 * 4096 + 512;  // one device slot in each MoE layer (the backend's layout)
  const uint64_t kHostRoom = 8 * row;  // exactly a pinned copy of every expert
  ResidencyOptions o;
  for (ResidencyMode m : {ResidencyMode::Auto, ResidencyMode::Resident}) {
    o.mode = m;
    const ResidencyChoice c = choose_device_residency(o, source(), row, kHostRoom, true);
    EXPECT_EQ(c.mode, ResidencyMode::Resident);
    EXPECT_EQ(c.expert_memory, 8 * 4 * 3 * 4096u);
    EXPECT_THAT(c.summary, HasSubstr("device memory"));
  }
  o.mode = ResidencyMode::Mapped;
  try {
    choose_device_residency(o, source(), row, kHostRoom, true);
    ADD_FAILURE() << "mapped was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--expert-residency mapped is not available on a device backend"));
  }
  o.mode = ResidencyMode::Streamed;
  try {
    choose_device_residency(o, source(), row, kHostRoom, true);
    ADD_FAILURE() << "streamed without a cache size was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs --expert-cache-mb"));
  }
  o.cache_bytes = 3 * row + row / 2;
  ResidencyChoice c = choose_device_residency(o, source(), row, kHostRoom, true);
  EXPECT_EQ(c.mode, ResidencyMode::Streamed);
  EXPECT_EQ(c.slots_per_layer, 3);
  EXPECT_EQ(c.expert_memory, 3 * row);
  EXPECT_THAT(c.summary, HasSubstr("3 of 8 slots per layer"));
  EXPECT_FALSE(c.device_from_files) << "the pinned copy fits the host";
  EXPECT_THAT(c.summary, HasSubstr("of pinned host memory"));
  const ResidencyChoice tight = choose_device_residency(o, source(), row, kHostRoom - 1, true);
  EXPECT_TRUE(tight.device_from_files) << "one byte short of a pinned copy: the files feed the slots";
  EXPECT_THAT(tight.summary, HasSubstr("from the files through pinned staging"));
  EXPECT_FALSE(c.prefetch) << "auto: off on a device, where wrong guesses cost the link's time";
  // A share of the misses computed on the host from the pinned copy: by default a quarter with at
  // least 16 threads and none with fewer, as asked otherwise, none when the files feed the slots
  // (nothing lies in host memory).
  EXPECT_EQ(c.host_share, 0.0) << "no threads given";
  o.host_threads = 16;
  c = choose_device_residency(o, source(), row, kHostRoom, true);
  EXPECT_EQ(c.host_share, 0.25);
  EXPECT_THAT(c.summary, HasSubstr("25% of misses computed on the host"));
  EXPECT_EQ(choose_device_residency(o, source(), row, kHostRoom - 1, true).host_share, 0.0);
  o.host_threads = 15;
  EXPECT_EQ(choose_device_residency(o, source(), row, kHostRoom, true).host_share, 0.0);
  o.host_share = 0.0;
  EXPECT_EQ(choose_device_residency(o, source(), row, kHostRoom, true).host_share, 0.0);
  EXPECT_THAT(choose_device_residency(o, source(), row, kHostRoom, true).summary, Not(HasSubstr("computed on the host")));
  o.host_share = 0.6;
  EXPECT_EQ(choose_device_residency(o, source(), row, kHostRoom, true).host_share, 0.6);
  // Asked for where it cannot apply: refused when no pinned copy fits (the budget can change), none
  // and said so when the host's threads cannot compute the model's experts.
  try {
    choose_device_residency(o, source(), row, kHostRoom - 1, true);
    ADD_FAILURE() << "a host share without a pinned copy was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--expert-host-share 0.6 computes misses from a pinned copy of every expert"));
  }
  c = choose_device_residency(o, source(), row, kHostRoom, false);
  EXPECT_EQ(c.host_share, 0.0);
  EXPECT_THAT(c.summary, HasSubstr("no misses computed on the host"));
  o.host_share = -1;
  o.host_threads = 16;
  c = choose_device_residency(o, source(), row, kHostRoom, false);
  EXPECT_EQ(c.host_share, 0.0) << "the default where the host cannot compute the experts";
  EXPECT_THAT(c.summary, Not(HasSubstr("on the host")));
  o.host_threads = 15;
  o.prefetch = PrefetchMode::On;
  EXPECT_TRUE(choose_device_residency(o, source(), row, kHostRoom, true).prefetch);
  o.prefetch = PrefetchMode::Auto;
  o.cache_bytes = row - 1;
  EXPECT_THROW(choose_device_residency(o, source(), row, kHostRoom, true), Error) << "less than one slot per layer";
  o.cache_bytes = 0;
  o.cache_slots = 100;
  c = choose_device_residency(o, source(), row, kHostRoom, true);
  EXPECT_EQ(c.slots_per_layer, 8) << "at most every expert";
}

// On the CPU backend the host computes every expert: a share of the misses for it means nothing.
TEST(ResidencyChoice, AHostShareIsRefusedOnTheCpu) {
  ResidencyOptions o;
  o.mode = ResidencyMode::Streamed;
  o.cache_slots = 3;
  o.host_share = 0.0;
  EXPECT_NO_THROW(choose_residency(o, source(), needs(0)));
  o.host_share = 0.5;
  try {
    choose_residency(o, source(), needs(0));
    ADD_FAILURE() << "a host share on the CPU was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("on the CPU backend the host computes every expert already"));
  }
}

TEST(ResidencyChoice, ExplicitModesAreKept) {
  ResidencyOptions o;
  o.mode = ResidencyMode::Mapped;
  EXPECT_EQ(choose_residency(o, source(), needs(0)).mode, ResidencyMode::Mapped);
  o.mode = ResidencyMode::Resident;
  EXPECT_EQ(choose_residency(o, source(), needs(0)).mode, ResidencyMode::Resident);
}

TEST(ResidencyChoice, DirectReadsOfUnalignedTensorsNeedLargerSlots) {
  const ExpertSource s = source();
  EXPECT_EQ(s.slot_bytes(0, false), 12288u);
  EXPECT_EQ(s.slot_bytes(0, true), 3 * 8192u) << "each part may straddle one more page";
}

}  // namespace
}  // namespace ts
