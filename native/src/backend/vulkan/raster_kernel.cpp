// Raster on Vulkan: every dtype; regions of rank up to 8 once collapsed that write each element
// once (a region writing one element twice depends on the CPU's order: it stays there). 4- and
// 8-byte elements are copied as words (shaders/raster.comp), 1- and 2-byte ones as parts of words
// (shaders/raster_narrow.comp). The fill is a buffer fill where its bit pattern repeats one word,
// else a region reading the value from a parameter buffer through stride 0. Regions run in order
// as batches: consecutive regions of one input whose written ranges are disjoint share a dispatch
// (a gather's thousands of rows take one), so a later region still overwrites an earlier one
// wherever they meet.
#include <algorithm>
#include <iterator>
#include <map>

#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "mnnpy/dtype.h"
#include "mnnpy/lowering.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kRasterSpirv[] =
#include "backend/vulkan/shaders/raster.spv.inc"
    ;
const uint32_t kRasterNarrowSpirv[] =
#include "backend/vulkan/shaders/raster_narrow.spv.inc"
    ;

constexpr int kMaxRank = 8, kRegionInts = 32;
// Workgroups one batch may spread over, all its regions together: enough to fill a device,
// few enough that a batch of many small regions does not launch mostly idle workgroups.
constexpr uint64_t kBatchGroups = 16384;
constexpr int64_t kFillInput = -1;  // a region reading the fill value

struct Batch {
  int64_t input;             // kFillInput: the fill value
  uint32_t first, regions;   // rows of the region table
  uint32_t groups_per_region;
};

class RasterKernel : public VulkanKernel {
 public:
  // `unit`: the shader's second push constant, words per element (raster.comp) or, for elements
  // narrower than a word, bytes per element (raster_narrow.comp).
  RasterKernel(std::vector<int32_t> table, std::vector<Batch> batches, bool narrow, uint32_t unit, std::vector<uint32_t> fill,
               bool fill_by_word)
      : table_(table.data(), table.size() * sizeof(int32_t)), batches_(std::move(batches)), unit_(unit),
        fill_(fill.data(), fill.size() * sizeof(uint32_t)), fill_word_(fill.empty() ? 0 : fill[0]),
        fill_by_word_(fill_by_word),
        pipeline_(narrow ? pipeline_for(kRasterNarrowSpirv, sizeof(kRasterNarrowSpirv), 3, 2 * sizeof(uint32_t))
                         : pipeline_for(kRasterSpirv, sizeof(kRasterSpirv), 3, 2 * sizeof(uint32_t))) {}

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& out = *args.outputs[0];
    if (out.nbytes() == 0) return;
    // Whole words (resolve_words): narrow elements are read and written as parts of words.
    const BufferRange out_range = resolve_words(out.data, out.nbytes());
    if (fill_by_word_) record_fill(out.data, out_range.bytes, fill_word_);
    for (const Batch& b : batches_) {
      const BufferRange in = b.input == kFillInput ? fill_.range()
                                                   : resolve_words(args.inputs[b.input]->data, args.inputs[b.input]->nbytes());
      const uint32_t push[2] = {b.first, unit_};
      pipeline_->dispatch({table_.range(), out_range, in}, push, b.groups_per_region, b.regions);
    }
  }

 private:
  ParamBuffer table_;
  std::vector<Batch> batches_;
  uint32_t unit_;
  ParamBuffer fill_;
  uint32_t fill_word_;
  bool fill_by_word_;
  std::shared_ptr<Pipeline> pipeline_;
};

// Groups regions (in order) into batches and writes their table rows.
class BatchBuilder {
 public:
  // `words`: per element, the unit of the table's offsets (1 for narrow elements: offsets in elements).
  explicit BatchBuilder(uint32_t words) : words_(words) {}

  // False where the shader cannot copy it (rank past 8 once collapsed, writes landing twice).
  bool add(int64_t input, int64_t src_offset, int64_t dst_offset, const StridedBox& box) {
    const int64_t count = box.count();
    if (count == 0) return true;
    if ((int)box.sizes.size() > kMaxRank || !distinct_offsets(box.sizes, box.dst_strides)) return false;
    int64_t lo = dst_offset, hi = dst_offset;  // elements written, first to last
    for (size_t d = 0; d < box.sizes.size(); ++d) (box.dst_strides[d] < 0 ? lo : hi) += (box.sizes[d] - 1) * box.dst_strides[d];
    if (batches_.empty() || batches_.back().input != input || batches_.back().regions == kMaxGroupsPerDim ||
        overlaps_batch(lo, hi)) {
      close_batch();
      batches_.push_back(Batch{input, (uint32_t)(table_.size() / kRegionInts), 0, 1});
    }
    written_[lo] = hi;
    largest_count_ = std::max(largest_count_, count);
    ++batches_.back().regions;

    std::vector<int32_t> row(kRegionInts, 0);
    row[0] = (int32_t)box.sizes.size();
    row[1] = (int32_t)(src_offset * words_);
    row[2] = (int32_t)(dst_offset * words_);
    row[3] = (int32_t)count;
    for (size_t d = 0; d < box.sizes.size(); ++d) {
      row[4 + d] = (int32_t)box.sizes[d];
      row[12 + d] = (int32_t)box.src_strides[d];
      row[20 + d] = (int32_t)box.dst_strides[d];
    }
    table_.insert(table_.end(), row.begin(), row.end());
    return true;
  }

  std::vector<Batch> finish() {
    close_batch();
    return std::move(batches_);
  }
  std::vector<int32_t> table() const { return table_; }

 private:
  bool overlaps_batch(int64_t lo, int64_t hi) const {
    auto next = written_.lower_bound(lo);  // the first range starting at lo or after
    if (next != written_.end() && next->first <= hi) return true;
    return next != written_.begin() && std::prev(next)->second >= lo;
  }
  void close_batch() {
    if (!batches_.empty()) {
      Batch& b = batches_.back();
      b.groups_per_region = (uint32_t)std::min<uint64_t>({groups_for((uint64_t)largest_count_, 256),
                                                           std::max<uint64_t>(kBatchGroups / b.regions, 1), kMaxGroupsPerDim});
    }
    written_.clear();
    largest_count_ = 0;
  }

  uint32_t words_;
  std::vector<int32_t> table_;
  std::vector<Batch> batches_;
  std::map<int64_t, int64_t> written_;  // the current batch's written ranges: first -> last element
  int64_t largest_count_ = 0;
};

std::unique_ptr<Kernel> make_raster_kernel(const KernelContext& ctx) {
  const TensorType& out = ctx.output_types[0];
  const size_t elem_size = dtype_size(out.dtype);
  const bool narrow = elem_size < 4;
  const uint32_t words = narrow ? 1 : (uint32_t)(elem_size / 4);
  // Word offsets are int32 in the shader.
  if ((uint64_t)out.numel() * words > INT32_MAX) return nullptr;
  for (const TensorType& t : ctx.input_types) if ((uint64_t)t.numel() * words > INT32_MAX) return nullptr;

  BatchBuilder builder(words);
  std::vector<uint32_t> fill;
  bool fill_by_word = false;
  if (ctx.attrs.has("fill")) {
    const double value = ctx.attrs.get_float("fill");
    fill.assign(words, 0);
    convert_values(DType::Float64, out.dtype, &value, fill.data(), 1);
    if (narrow) fill[0] *= elem_size == 1 ? 0x01010101u : 0x00010001u;  // the element repeated over the word
    fill_by_word = words == 1 || fill[0] == fill[1];
    if (!fill_by_word) {
      const std::vector<int64_t> all{out.numel()};
      builder.add(kFillInput, 0, 0, collapse_box(all, {0}, {1}));
    }
  }
  for (const RasterRegion& r : raster_regions(ctx.attrs)) {
    if (!builder.add(r.input, r.src_offset, r.dst_offset, collapse_box(r.sizes, r.src_strides, r.dst_strides))) {
      return nullptr;
    }
  }
  std::vector<Batch> batches = builder.finish();
  // Parameter buffers may not be empty, though unused ones are never bound.
  std::vector<int32_t> table = builder.table();
  if (table.empty()) table.assign(kRegionInts, 0);
  if (fill.empty()) fill.push_back(0);
  return std::make_unique<RasterKernel>(std::move(table), std::move(batches), narrow, narrow ? (uint32_t)elem_size : words,
                                        std::move(fill), fill_by_word);
}

MNNPY_REGISTER_KERNEL("Raster", "vulkan", make_raster_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
