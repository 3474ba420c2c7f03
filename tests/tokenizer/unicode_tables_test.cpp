// The generated lowercase / NFD tables behind BERT preprocessing, on values from the Unicode database.
#include <gtest/gtest.h>

#include "tokenizer/unicode_tables.h"

namespace ts {
namespace {

TEST(UnicodeTables, Lowercase) {
  EXPECT_EQ(unicode_to_lower('A'), uint32_t('a'));
  EXPECT_EQ(unicode_to_lower('a'), uint32_t('a'));
  EXPECT_EQ(unicode_to_lower(0xC4), 0xE4u);     // Ä -> ä
  EXPECT_EQ(unicode_to_lower(0x100), 0x101u);   // Ā -> ā (stride-2 run)
  EXPECT_EQ(unicode_to_lower(0x101), 0x101u);   // ā has no lowercase mapping
  EXPECT_EQ(unicode_to_lower(0x411), 0x431u);   // Б -> б
  EXPECT_EQ(unicode_to_lower(0x3A9), 0x3C9u);   // Ω -> ω
  EXPECT_EQ(unicode_to_lower(0x10400), 0x10428u);  // Deseret
  EXPECT_EQ(unicode_to_lower(0x4E00), 0x4E00u);
}

TEST(UnicodeTables, NfdBase) {
  EXPECT_EQ(unicode_nfd_base(0xC4), uint32_t('A'));    // Ä
  EXPECT_EQ(unicode_nfd_base(0x1EC7), uint32_t('e'));  // ệ (two combining marks)
  EXPECT_EQ(unicode_nfd_base(0xAC00), 0x1100u);        // 가 -> ᄀ
  EXPECT_EQ(unicode_nfd_base('e'), uint32_t('e'));
  EXPECT_EQ(unicode_nfd_base(0x1F999), 0x1F999u);
}

}  // namespace
}  // namespace ts
