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

namespace {

// Activation value i and its block's per-block data, as float64.
struct Act {
  std::vector<double> x;     // dequantized values
  std::vector<double> s;     // Q8_1: the stored d * sum(q) per block
};

Act dequant_act(GgmlType a, const uint8_t* xq, int64_t k) {
  Act act;
  act.x.resize(static_cast<size_t>(k));
  if (a == GgmlType::F32) {
    for (int64_t i = 0; i < k; ++i) act.x[i] = load_f32(xq + 4 * i);
  } else if (a == GgmlType::Q8_K) {
    for (int64_t b = 0; b < k / kQKK; ++b) {
      const uint8_t* blk = xq + b * layout::q8_k_bytes;
      for (int j = 0; j < kQKK; ++j)
        act.x[b * kQKK + j] = double(load_f32(blk)) * static_cast<int8_t>(blk[layout::q8_k_qs + j]);
    }
  } else {
    const bool q81 = a == GgmlType::Q8_1;
    const int bytes = q81 ? layout::q8_1_bytes : layout::q8_0_bytes, qs = q81 ? layout::q8_1_qs : layout::q8_0_qs;
    for (int64_t b = 0; b < k / kQK; ++b) {
      const uint8_t* blk = xq + b * bytes;
      for (int j = 0; j < kQK; ++j) act.x[b * kQK + j] = double(load_f16(blk)) * static_cast<int8_t>(blk[qs + j]);
      if (q81) act.s.push_back(load_f16(blk + layout::q8_1_s));
    }
  }
  return act;
}

Block32 unpack32(GgmlType t, const uint8_t* b) {
  switch (t) {
    case GgmlType::Q4_0: return unpack_q4_0(b);
    case GgmlType::Q4_1: return unpack_q4_1(b);
    case GgmlType::Q5_0: return unpack_q5_0(b);
    case GgmlType::Q5_1: return unpack_q5_1(b);
    case GgmlType::Q8_0: return unpack_q8_0(b);
    default: return unpack_mxfp4(b);
  }
}
BlockK unpack_k(GgmlType t, const uint8_t* b) {
  switch (t) {
    case GgmlType::Q4_K: return unpack_q4_k(b);
    case GgmlType::Q5_K: return unpack_q5_k(b);
    default: return unpack_q6_k(b);
  }
}

}  // namespace

std::vector<double> dequantize_activation(GgmlType a, const uint8_t* xq, int64_t k) { return dequant_act(a, xq, k).x; }

Exact exact_dot(GgmlType wt, const uint8_t* w, const uint8_t* xq, int64_t k) {
  const Act act = dequant_act(activation_type(wt), xq, k);
  const TypeInfo& ti = type_info(wt);
  Exact e{0, 0};
  if (ti.block_elems == 1) {
    std::vector<float> wf(static_cast<size_t>(k));
    dequantize_ref(wt, w, wf.data(), k);
    for (int64_t i = 0; i < k; ++i) {
      e.value += double(wf[i]) * act.x[i];
      e.magnitude += std::fabs(double(wf[i]) * act.x[i]);
    }
  } else if (ti.block_elems == kQK) {
    for (int64_t b = 0; b < k / kQK; ++b) {
      const Block32 u = unpack32(wt, w + b * ti.block_bytes);
      for (int j = 0; j < kQK; ++j) {
        const double term = double(u.d) * u.q[j] * act.x[b * kQK + j];
        e.value += term;
        e.magnitude += std::fabs(term);
      }
      if (!act.s.empty()) {  // Q8_1: the min multiplies the stored block sum
        e.value += double(u.m) * act.s[b];
        e.magnitude += std::fabs(double(u.m) * act.s[b]);
      }
    }
  } else {
    for (int64_t b = 0; b < k / kQKK; ++b) {
      const BlockK u = unpack_k(wt, w + b * ti.block_bytes);
      for (int j = 0; j < kQKK; ++j) {
        const double x = act.x[b * kQKK + j];
        const double pos = double(u.d) * u.scale[j / 16] * u.q[j] * x, neg = double(u.dmin) * u.min[j / 16] * x;
        e.value += pos - neg;
        e.magnitude += std::fabs(pos) + std::fabs(neg);
      }
    }
  }
  return e;
}

}  // namespace ts::quant::test
