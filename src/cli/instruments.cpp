#include "cli/instruments.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/error.h"
#include "util/output_file.h"
#include "util/sys_memory.h"

namespace ts::cli {
namespace {

bool phases_from_env() {
  const char* v = std::getenv("TURBOSPARK_PHASES");
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

RunInstruments::RunInstruments(const ModelOptions& o, const Model& m) : o_(o), m_(m) {
  if (o.phases || !o.phases_json.empty() || phases_from_env()) {
    clock_ = std::make_unique<PhaseClock>();
    PhaseClock::set_active(clock_.get());
  }
  if (o.router_trace && o.router_hist.empty()) fail("--router-trace needs --router-hist FILE");
  if (!o.router_hist.empty()) {
    const HParams& h = m.hp();
    router_ = std::make_unique<RouterRecorder>(h.n_layer, h.n_expert, h.n_expert_used, o.router_trace);
    RouterRecorder::set_active(router_.get());
  }
  if (m.hp().is_moe()) start_ = m.experts().stats();
}

void RunInstruments::restart() {
  if (clock_) {
    clock_ = std::make_unique<PhaseClock>();
    PhaseClock::set_active(clock_.get());
  }
  if (m_.hp().is_moe()) start_ = m_.experts().stats();
}

RunInstruments::~RunInstruments() {
  if (clock_) PhaseClock::set_active(nullptr);
  if (router_) RouterRecorder::set_active(nullptr);
}

void RunInstruments::report(int64_t tokens) {
  if (router_) {
    const std::string j = router_->json();
    write_output_file(o_.router_hist, j.data(), j.size());
  }
  if (!clock_) return;
  const auto sec = clock_->seconds();
  double wall = 0;
  for (double s : sec) wall += s;
  ExpertStats st;
  if (m_.hp().is_moe()) {
    const ExpertStats now = m_.experts().stats();
    st.requests = now.requests - start_.requests;
    st.hits = now.hits - start_.hits;
    st.prefetch_hits = now.prefetch_hits - start_.prefetch_hits;
    st.reads = now.reads - start_.reads;
    st.prefetch_reads = now.prefetch_reads - start_.prefetch_reads;
    st.prefetch_wasted = now.prefetch_wasted - start_.prefetch_wasted;
    st.prefetch_cancelled = now.prefetch_cancelled - start_.prefetch_cancelled;
    st.bytes_read = now.bytes_read - start_.bytes_read;
    st.host_computed = now.host_computed - start_.host_computed;
  }
  const double per_tok = tokens > 0 ? 1.0 / static_cast<double>(tokens) : 0.0;
  const double hit_rate = st.requests ? static_cast<double>(st.hits) / static_cast<double>(st.requests) : 0.0;
  const uint64_t peak = peak_rss_bytes();

  if (o_.phases || phases_from_env()) {
    std::string out = fmt::format("phases: {:.3f} s wall for {} tokens ({:.1f} ms/token)\n", wall, tokens, wall * per_tok * 1e3);
    for (int i = 0; i < kPhaseCount; ++i)
      out += fmt::format("  {:<20} {:9.3f} s {:5.1f}%  {:8.2f} ms/token\n", phase_name(static_cast<Phase>(i)), sec[i],
                         wall > 0 ? 100.0 * sec[i] / wall : 0.0, sec[i] * per_tok * 1e3);
    if (m_.hp().is_moe()) {
      out += fmt::format("experts: {}\n", m_.residency().summary);
      out += fmt::format("  {} requests, {} hits ({:.1f}%), {} reads, {} prefetch reads ({} used, {} wasted, {} stopped), {} computed on the host\n",
                         st.requests, st.hits, 100.0 * hit_rate, st.reads, st.prefetch_reads, st.prefetch_hits,
                         st.prefetch_wasted, st.prefetch_cancelled, st.host_computed);
      out += fmt::format("  {} read, {:.1f} MB/token\n", format_bytes(st.bytes_read),
                         static_cast<double>(st.bytes_read) * per_tok / 1e6);
    }
    out += fmt::format("peak RSS {}\n", format_bytes(peak));
    std::fputs(out.c_str(), stderr);
  }
  if (!o_.phases_json.empty()) {
    nlohmann::json j;
    j["tokens"] = tokens;
    j["wall_s"] = wall;
    nlohmann::json ph;
    for (int i = 0; i < kPhaseCount; ++i) ph[phase_name(static_cast<Phase>(i))] = sec[i];
    j["phases_s"] = ph;
    j["residency"] = m_.hp().is_moe() ? residency_mode_name(m_.residency().mode) : "none";
    j["slots_per_layer"] = m_.hp().is_moe() ? m_.residency().slots_per_layer : 0;
    j["expert_requests"] = st.requests;
    j["expert_hits"] = st.hits;
    j["hit_rate"] = hit_rate;
    j["expert_reads"] = st.reads;
    j["prefetch_reads"] = st.prefetch_reads;
    j["prefetch_hits"] = st.prefetch_hits;
    j["prefetch_wasted"] = st.prefetch_wasted;
    j["prefetch_cancelled"] = st.prefetch_cancelled;
    j["host_computed"] = st.host_computed;
    j["bytes_read"] = st.bytes_read;
    j["bytes_per_token"] = static_cast<double>(st.bytes_read) * per_tok;
    j["peak_rss"] = peak;
    const std::string s = j.dump(1);
    write_output_file(o_.phases_json, s.data(), s.size());
  }
}

}  // namespace ts::cli
