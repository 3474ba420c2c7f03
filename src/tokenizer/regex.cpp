// PCRE2 wrapper. Match data is per call (a thread-local cache keeps that cheap), the code is shared.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "util/error.h"

namespace ts {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  std::string pattern;
};

namespace {
// One match-data block and JIT stack per thread, big enough for any of our patterns' groups.
struct ThreadScratch {
  pcre2_match_data* data = pcre2_match_data_create(32, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
  ThreadScratch() { pcre2_jit_stack_assign(ctx, nullptr, stack); }
  ~ThreadScratch() {
    pcre2_match_context_free(ctx);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};
ThreadScratch& scratch() {
  thread_local ThreadScratch s;
  return s;
}
}  // namespace

Regex::Regex(const std::string& pattern) : impl_(std::make_unique<Impl>()) {
  impl_->pattern = pattern;
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &off, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail("pre-tokenizer regex '{}' does not compile at offset {}: {}", pattern, off, reinterpret_cast<char*>(msg));
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
}

Regex::~Regex() { pcre2_code_free(impl_->code); }

bool Regex::find(std::string_view subject, size_t from, Match& m, bool anchored) const {
  ThreadScratch& s = scratch();
  const int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), from,
                             anchored ? PCRE2_ANCHORED : 0, s.data, s.ctx);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    fail("regex '{}' failed on a {}-byte text: {}", impl_->pattern, subject.size(), reinterpret_cast<char*>(msg));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
  m.begin = ov[0];
  m.end = ov[1];
  m.group = 0;
  for (int g = 1; g < rc; ++g) {
    if (ov[2 * g] != PCRE2_UNSET) {
      m.group = g;
      break;
    }
  }
  return true;
}

void regex_split(std::string_view text, const std::vector<std::unique_ptr<Regex>>& patterns,
                 std::vector<std::string_view>& pieces) {
  pieces.assign(1, text);
  std::vector<std::string_view> next;
  for (const auto& re : patterns) {
    next.clear();
    for (std::string_view piece : pieces) {
      size_t gap = 0, search = 0;  // start of the unmatched text, start of the next search
      Regex::Match m;
      while (search < piece.size() && re->find(piece, search, m)) {
        if (m.end == m.begin) {  // an empty match splits nothing: search again one byte on
          search = m.begin + 1;
          continue;
        }
        if (m.begin > gap) next.push_back(piece.substr(gap, m.begin - gap));
        next.push_back(piece.substr(m.begin, m.end - m.begin));
        gap = search = m.end;
      }
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    pieces.swap(next);
  }
}

}  // namespace ts
