#include "server/job.h"

namespace ts::server {

std::optional<JobResult> Job::wait(std::vector<SampledToken>& tokens, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !tokens_.empty() || result_; });
  for (auto& t : tokens_) tokens.push_back(std::move(t));
  tokens_.clear();
  return result_;
}

void Job::push(SampledToken t) {
  {
    std::lock_guard lock(mu_);
    tokens_.push_back(std::move(t));
  }
  cv_.notify_all();
}

void Job::finish(JobResult r) {
  {
    std::lock_guard lock(mu_);
    result_ = std::move(r);
  }
  cv_.notify_all();
}

}  // namespace ts::server
