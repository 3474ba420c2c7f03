#include "model/tensor_binding.h"

#include <vector>

#include "gguf/gguf.h"
#include "quant/kernels.h"
#include "util/error.h"

namespace ts {

void check_shape(const std::string& file, const std::string& name, GgmlType type, const std::vector<uint64_t>& dims,
                 std::vector<uint64_t> want) {
  while (want.size() > 1 && want.back() == 1) want.pop_back();
  if (dims != want)
    fail("'{}': tensor '{}' has shape [{}], expected [{}]", file, name, fmt::join(dims, ", "), fmt::join(want, ", "));
  if (!type_info(type).supported)
    fail("'{}': tensor '{}' has type {}, which TurboSpark cannot compute with (supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, MXFP4)",
         file, name, type_name(type));
}

const GgufTensor& check_tensor(const GgufFile& g, const std::string& name, std::vector<uint64_t> want) {
  const GgufTensor* t = g.find_tensor(name);
  if (!t) fail("'{}': required tensor '{}' is missing", g.path(), name);
  check_shape(g.path(), name, t->type, t->dims, std::move(want));
  return *t;
}

bool has_tensor(const GgufFile& g, const std::string& name) { return g.find_tensor(name) != nullptr; }

Mat bind_matrix(const GgufFile& g, Backend& be, const std::string& name, int64_t cols, int64_t rows, int64_t stack) {
  const GgufTensor& t = check_tensor(g, name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), static_cast<uint64_t>(stack)});
  Mat m;
  m.type = t.type;
  m.data = t.data;
  m.rows = rows * stack;
  m.cols = cols;
  m.row_stride = t.row_bytes();
  return be.upload(m);
}

const float* bind_vector(const GgufFile& g, Backend& be, const std::string& name, int64_t n, int64_t stack) {
  const GgufTensor& t = check_tensor(g, name, {static_cast<uint64_t>(n), static_cast<uint64_t>(stack)});
  std::vector<float> v(n * stack);
  quant::dequantize(t.type, t.data, v.data(), n * stack);
  return be.upload_f32(v);
}

}  // namespace ts
