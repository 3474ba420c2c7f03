// Binding GGUF tensors to backend weights with the shape the flow expects. A missing tensor, a
// wrong shape or a type without kernels is a load-time error naming the tensor, so nothing fails
// (or silently computes garbage) in the middle of a forward pass.
#pragma once
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ts {

class GgufFile;
struct GgufTensor;

// The tensor `name` checked to exist with dims `want` (ggml order; trailing 1s may be omitted) and a
// type TurboSpark computes with; check_shape is the same check on a tensor described elsewhere (an
// install manifest), `file` naming where.
const GgufTensor& check_tensor(const GgufFile& g, const std::string& name, std::vector<uint64_t> want);
void check_shape(const std::string& file, const std::string& name, GgmlType type, const std::vector<uint64_t>& dims,
                 std::vector<uint64_t> want);

// A matrix of `rows` rows of `cols` elements, optionally a stack of `stack` such matrices
// (routed experts): returned with rows * stack rows.
Mat bind_matrix(const GgufFile& g, Backend& be, const std::string& name, int64_t cols, int64_t rows, int64_t stack = 1);
// An f32 vector of n values (or a stack of them), converted from whatever type the file stores.
const float* bind_vector(const GgufFile& g, Backend& be, const std::string& name, int64_t n, int64_t stack = 1);
bool has_tensor(const GgufFile& g, const std::string& name);

}  // namespace ts
