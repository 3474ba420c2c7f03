#include "quant_test_util.h"

#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace ts::quant::test {

const std::vector<GgmlType>& dot_types() {
  static const std::vector<GgmlType> types{GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,  GgmlType::Q4_0,
                                           GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,  GgmlType::Q8_0,
                                           GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
  return types;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

std::vector<float> gaussian(size_t n, std::mt19937& rng, float sigma) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<uint8_t> random_weights(GgmlType t, int64_t n, std::mt19937& rng) {
  const TypeInfo& ti = type_info(t);
  const int64_t nb = n / ti.block_elems;
  std::vector<uint8_t> out(static_cast<size_t>(nb) * ti.block_bytes);
  if (t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16) {
    quantize_weights(t, gaussian(static_cast<size_t>(n), rng).data(), out.data(), n);
    return out;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : out) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> mag(0.01f, 1.0f);
  std::bernoulli_distribution neg(0.5);
  struct Field {
    int offset;
    bool is_signed;
  };
  std::vector<Field> fields;
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: fields = {{0, true}}; break;
    case GgmlType::Q4_1: case GgmlType::Q5_1: fields = {{0, true}, {2, true}}; break;
    case GgmlType::Q4_K: case GgmlType::Q5_K: fields = {{0, false}, {2, false}}; break;
    case GgmlType::Q6_K: fields = {{layout::q6_k_d, true}}; break;
    default: break;
  }
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = out.data() + b * ti.block_bytes;
    for (const Field& f : fields) store_f16(blk + f.offset, f.is_signed && neg(rng) ? -mag(rng) : mag(rng));
    if (t == GgmlType::MXFP4) blk[0] = static_cast<uint8_t>(118 + byte(rng) % 16);
  }
  return out;
}

Exact exact_dot(GgmlType wt, const uint8_t* w, const float* x, int64_t k) {
  std::vector<float> wf(static_cast<size_t>(k));
  dequantize_ref(wt, w, wf.data(), k);
  Exact e{0, 0};
  for (int64_t i = 0; i < k; ++i) {
    e.value += double(wf[i]) * x[i];
    e.magnitude += std::fabs(double(wf[i]) * x[i]);
  }
  return e;
}

}  // namespace ts::quant::test
