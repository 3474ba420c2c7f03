// Every rule of the slot planner (residency/slot_planner.h), on small hand-built cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "residency/slot_planner.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;
using State = SlotPlanner::State;
using V = std::vector<int32_t>;

// Plans and immediately completes every read, as a store does when its reads succeed.
SlotPlan plan_and_fill(SlotPlanner& p, const V& req, const V& protect = {}) {
  SlotPlan plan = p.plan(req, protect);
  for (const auto& e : plan.entries)
    if (!e.hit) p.commit(e.slot);
  return plan;
}

std::vector<bool> hits(const SlotPlan& p) {
  std::vector<bool> h;
  for (const auto& e : p.entries) h.push_back(e.hit);
  return h;
}

TEST(SlotPlanner, EmptySlotsAreUsedFirstLowestIndexFirst) {
  SlotPlanner p(4, 16, EvictionPolicy::LFU);
  const SlotPlan plan = plan_and_fill(p, {7, 3, 9});
  ASSERT_EQ(plan.entries.size(), 3u);
  EXPECT_EQ(plan.entries[0].slot, 0);
  EXPECT_EQ(plan.entries[1].slot, 1);
  EXPECT_EQ(plan.entries[2].slot, 2);
  for (const auto& e : plan.entries) {
    EXPECT_FALSE(e.hit);
    EXPECT_EQ(e.evicted, -1);
  }
  EXPECT_EQ(p.slot_of(3), 1);
  EXPECT_EQ(p.expert_in(2), 9);
  EXPECT_EQ(p.slot_of(5), -1);
}

TEST(SlotPlanner, ResidentExpertsAreHitsInTheirSlot) {
  SlotPlanner p(4, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1, 2});
  const SlotPlan plan = plan_and_fill(p, {2, 5, 1});
  EXPECT_EQ(hits(plan), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(plan.entries[0].slot, 1);
  EXPECT_EQ(plan.entries[1].slot, 2);  // the first empty slot
  EXPECT_EQ(plan.entries[2].slot, 0);
}

TEST(SlotPlanner, LfuEvictsTheLowestUseCount) {
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1, 2});
  plan_and_fill(p, {1});
  plan_and_fill(p, {1});  // uses: 1 -> 3, 2 -> 1
  plan_and_fill(p, {2});  // uses: 2 -> 2, and 1 is now the least recently used
  const SlotPlan plan = plan_and_fill(p, {3});
  EXPECT_EQ(plan.entries[0].evicted, 2) << "LFU must evict the less used expert even though it was used last";
  EXPECT_EQ(p.slot_of(1), 0);
  EXPECT_EQ(p.uses(1), 3);
  EXPECT_EQ(p.uses(2), 2);  // counts are kept after eviction (cumulative)
}

TEST(SlotPlanner, LfuTiesGoToTheLeastRecentlyUsed) {
  SlotPlanner p(3, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {4, 5, 6});  // all used once; within a plan, request order sets recency
  plan_and_fill(p, {4});        // 4: 2 uses
  const SlotPlan plan = plan_and_fill(p, {7});
  EXPECT_EQ(plan.entries[0].evicted, 5) << "5 and 6 have one use each; 5 was used before 6";
}

TEST(SlotPlanner, LruEvictsTheLeastRecentlyUsedWhateverItsCount) {
  SlotPlanner p(2, 16, EvictionPolicy::LRU);
  plan_and_fill(p, {1, 2});
  for (int i = 0; i < 5; ++i) plan_and_fill(p, {1});
  plan_and_fill(p, {2});
  const SlotPlan plan = plan_and_fill(p, {3});
  EXPECT_EQ(plan.entries[0].evicted, 1);
}

TEST(SlotPlanner, ACountedHitRefreshesRecency) {
  SlotPlanner p(2, 16, EvictionPolicy::LRU);
  plan_and_fill(p, {1, 2});
  plan_and_fill(p, {1});  // hit: now 2 is the oldest
  EXPECT_EQ(plan_and_fill(p, {3}).entries[0].evicted, 2);
}

TEST(SlotPlanner, ProtectedSlotsAreNeverEvicted) {
  for (EvictionPolicy pol : {EvictionPolicy::LFU, EvictionPolicy::LRU}) {
    SlotPlanner p(3, 16, pol);
    plan_and_fill(p, {1, 2, 3});
    // Expert 1 (slot 0) is the natural victim under both policies; protect it and slot 1.
    const SlotPlan plan = plan_and_fill(p, {9}, {0, 1});
    EXPECT_EQ(plan.entries[0].slot, 2);
    EXPECT_EQ(plan.entries[0].evicted, 3);
  }
}

TEST(SlotPlanner, RefusesLoudlyRatherThanEvictAProtectedSlot) {
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1, 2});
  try {
    p.plan(V{3}, V{0, 1});
    FAIL() << "a plan that needs a protected slot was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("expert 3"));
    EXPECT_THAT(e.what(), HasSubstr("protected"));
  }
  // The refused plan changed nothing.
  EXPECT_EQ(p.slot_of(1), 0);
  EXPECT_EQ(p.slot_of(2), 1);
  EXPECT_EQ(p.slot_of(3), -1);
  EXPECT_EQ(p.uses(3), 0);
}

TEST(SlotPlanner, SlotsBeingFilledAreNeverEvicted) {
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  const SlotPlan first = p.plan(V{1, 2}, V{});  // both slots Filling: reads in flight
  EXPECT_EQ(p.state(0), State::Filling);
  EXPECT_EQ(p.fit(V{3}, V{}), 0u);
  EXPECT_THROW(p.plan(V{3}, V{}), Error);
  p.commit(first.entries[0].slot);
  EXPECT_EQ(p.state(0), State::Valid);
  EXPECT_EQ(p.plan(V{3}, V{}).entries[0].slot, 0);  // slot 1 is still being filled
}

TEST(SlotPlanner, AFailedReadLeavesTheSlotEmptyNeverStale) {
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1});
  const SlotPlan plan = p.plan(V{2}, V{});
  p.abandon(plan.entries[0].slot);
  EXPECT_EQ(p.state(plan.entries[0].slot), State::Empty);
  EXPECT_EQ(p.expert_in(plan.entries[0].slot), -1);
  EXPECT_EQ(p.slot_of(2), -1);
  const SlotPlan again = p.plan(V{2}, V{});
  EXPECT_FALSE(again.entries[0].hit) << "an expert whose read failed must be read again";
  EXPECT_EQ(again.entries[0].slot, plan.entries[0].slot) << "the emptied slot is the first choice";
}

TEST(SlotPlanner, AFailedReadOverAnEvictedExpertDoesNotBringItBack) {
  SlotPlanner p(1, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1});
  const SlotPlan plan = p.plan(V{2}, V{});
  EXPECT_EQ(plan.entries[0].evicted, 1);
  p.abandon(plan.entries[0].slot);
  EXPECT_EQ(p.slot_of(1), -1) << "the slot's old contents were being overwritten: they are gone";
  EXPECT_EQ(p.slot_of(2), -1);
}

TEST(SlotPlanner, CommitAndAbandonOnlyApplyToSlotsBeingFilled) {
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  EXPECT_THROW(p.commit(0), Error);
  EXPECT_THROW(p.abandon(0), Error);
  plan_and_fill(p, {1});
  EXPECT_THROW(p.commit(0), Error);
  EXPECT_THROW(p.abandon(0), Error);
}

TEST(SlotPlanner, HitsOfAPlanAreNotItsVictims) {
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1, 2});
  plan_and_fill(p, {2});
  plan_and_fill(p, {2});
  // 1 is the least used, so the miss on 3 would evict it, but 1 is requested in the same plan.
  const SlotPlan plan = plan_and_fill(p, {3, 1});
  EXPECT_EQ(plan.entries[0].evicted, 2);
  EXPECT_TRUE(plan.entries[1].hit);
}

TEST(SlotPlanner, FitIsTheLongestPrefixThatCanBePlaced) {
  SlotPlanner p(3, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1, 2});
  EXPECT_EQ(p.fit(V{1, 2, 3}, V{}), 3u);
  EXPECT_EQ(p.fit(V{4, 5, 6}, V{}), 3u);   // one empty slot and two evictions
  EXPECT_EQ(p.fit(V{4, 5, 6, 7}, V{}), 3u);
  EXPECT_EQ(p.fit(V{1, 4, 5}, V{}), 3u);   // the hit pins slot 0, the misses take slots 1 and 2
  EXPECT_EQ(p.fit(V{1, 2, 4, 5}, V{}), 3u);
  EXPECT_EQ(p.fit(V{4, 5}, V{0, 1}), 1u);  // only slot 2 is evictable
  EXPECT_EQ(p.fit(V{1, 4}, V{0, 1}), 2u);  // a hit on a protected slot costs nothing
  EXPECT_EQ(p.fit(V{4}, V{0, 1, 2}), 0u);
  EXPECT_EQ(p.fit(V{}, V{}), 0u);
  // Misses counted on the slots a later hit needs: 4 and 5 take slots 1 and 2 (or evict), 1 pins
  // slot 0 -- fits; but with 1 and 2 also needed, the prefix stops at the hit that has no room.
  EXPECT_EQ(p.fit(V{4, 5, 1}, V{}), 3u);
  EXPECT_EQ(p.fit(V{4, 5, 1, 2}, V{}), 3u);
  SlotPlanner one(1, 16, EvictionPolicy::LFU);
  plan_and_fill(one, {11});
  EXPECT_EQ(one.fit(V{10, 11}, V{}), 1u) << "the miss on 10 needs the only slot, which the hit on 11 pins";
}

// A layer whose token asks for more experts (top-k) than the cache has slots: the store plans the
// set in waves, releasing each wave's slots before the next.
TEST(SlotPlanner, ACacheSmallerThanOneTokensWorkingSetIsServedInWaves) {
  const V topk = {10, 11, 12, 13};  // one token's experts, k = 4
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  ASSERT_EQ(p.fit(topk, V{}), 2u);
  EXPECT_THROW(p.plan(topk, V{}), Error);
  SlotPlan wave1 = p.plan(V{10, 11}, V{});
  for (const auto& e : wave1.entries) p.commit(e.slot);
  // While wave 1 is leased (protected), nothing else fits.
  EXPECT_EQ(p.fit(V{12, 13}, V{0, 1}), 0u);
  // Released: wave 2 takes both slots.
  SlotPlan wave2 = p.plan(V{12, 13}, V{});
  EXPECT_EQ(wave2.entries[0].evicted + wave2.entries[1].evicted, 10 + 11);
  for (const auto& e : wave2.entries) p.commit(e.slot);
  // With one slot, four waves of one.
  SlotPlanner one(1, 16, EvictionPolicy::LRU);
  for (int32_t e : topk) {
    ASSERT_EQ(one.fit(topk, V{}), 1u);
    const SlotPlan w = one.plan(V{e}, V{});
    one.commit(w.entries[0].slot);
    EXPECT_EQ(one.expert_in(0), e);
  }
}

TEST(SlotPlanner, PrefetchPlansNeitherCountNorStampUses) {
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1});
  const SlotPlan pre = p.plan(V{5}, V{}, /*count_use=*/false);
  p.commit(pre.entries[0].slot);
  EXPECT_EQ(p.uses(5), 0);
  // 5 was never used, so it is the LFU victim although it was placed last.
  EXPECT_EQ(plan_and_fill(p, {6}).entries[0].evicted, 5);
}

TEST(SlotPlanner, AUseServedWithoutASlotCountsAndStamps) {
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  plan_and_fill(p, {1, 2});
  p.note_use(1);  // computed where it lies (a host share): counted as a use, no slot taken
  p.note_use(9);
  EXPECT_EQ(p.uses(1), 2);
  EXPECT_EQ(p.uses(9), 1);
  EXPECT_EQ(p.slot_of(9), -1);
  // 2 has the fewest uses: LFU evicts it, not 1.
  EXPECT_EQ(plan_and_fill(p, {3}).entries[0].evicted, 2);
  EXPECT_THROW(p.note_use(16), Error);
}

TEST(SlotPlanner, BadArgumentsAreErrors) {
  EXPECT_THROW(SlotPlanner(0, 16, EvictionPolicy::LFU), Error);
  SlotPlanner p(2, 16, EvictionPolicy::LFU);
  EXPECT_THROW(p.plan(V{16}, V{}), Error);
  EXPECT_THROW(p.plan(V{-1}, V{}), Error);
  EXPECT_THROW(p.plan(V{3, 3}, V{}), Error);
  EXPECT_THROW(p.plan(V{3}, V{2}), Error);  // slot 2 does not exist
}

}  // namespace
}  // namespace ts
