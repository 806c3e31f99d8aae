// The reductions the Reduce op performs (its `kind` attribute): what its builder, inference and
// gradient choose among and its kernels compute.
#pragma once

namespace mnnpy {

enum ReduceKind : int { kReduceSum, kReduceProd, kReduceMin, kReduceMax, kReduceAny, kReduceAll, kReduceArgMin, kReduceArgMax };

}  // namespace mnnpy
