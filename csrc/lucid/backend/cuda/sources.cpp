#include "lucid/backend/cuda/sources.h"

#include "lucid/core/dtype.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

extern const char* const kElementwiseSource;
extern const char* const kReduceSource;
extern const char* const kIndexSource;

const std::vector<ModuleSource>& fixed_modules() {
  static const std::vector<ModuleSource> modules = {
      {"elementwise", kElementwiseSource},
      {"reduce", kReduceSource},
      {"index", kIndexSource},
  };
  return modules;
}

const ModuleSource& fixed_module(const std::string& name) {
  for (const auto& m : fixed_modules())
    if (name == m.name) return m;
  fail<Error>("internal: no CUDA kernel module named '", name, "'");
}

namespace {

struct Instance {
  const char* type;    // the C++ type a kernel is instantiated for
  const char* suffix;  // its kernel-name suffix, the shard it compiles in
};
// In DType's order (type_suffix indexes it).
constexpr Instance kTypes[] = {{"bool", "b8"},  {"u8", "u8"},     {"i8", "i8"},       {"i16", "i16"},
                               {"i32", "i32"},   {"i64", "i64"},   {"f16", "f16"},     {"bf16", "bf16"},
                               {"float", "f32"}, {"double", "f64"}};
constexpr Instance kWidths[] = {{"u8", "w1"}, {"u16", "w2"}, {"u32", "w4"}, {"u64", "w8"}};
static_assert(sizeof kTypes / sizeof kTypes[0] == kNumDTypes && int(DType::Bool) == 0 && int(DType::Float64) == 9);
constexpr size_t kFirstNumeric = size_t(DType::UInt8), kFirstFloat = size_t(DType::Float16);

// `#define list(M) M(type, suffix)...` over the instances of `shard` among `from`.
template <size_t N>
std::string instance_list(const char* list, const Instance (&from)[N], size_t first, const std::string& shard) {
  std::string out = std::string("#define ") + list + "(M)";
  for (size_t i = first; i < N; ++i)
    if (shard == from[i].suffix) out += std::string(" M(") + from[i].type + ", " + from[i].suffix + ")";
  return out + "\n";
}

}  // namespace

const std::vector<std::string>& kernel_shards() {
  static const std::vector<std::string> shards = {"f32", "b8", "i64", "", "w4", "w1", "w8", "i32",
                                                  "f16", "bf16", "w2", "f64", "u8", "i8", "i16"};
  return shards;
}

std::string shard_source(const ModuleSource& module, const std::string& shard) {
  // The kernel bodies instantiate through these lists; each shard's lists
  // hold its own instance only.
  return std::string(prelude_source()) + instance_list("LUCID_FOR_ALL_TYPES", kTypes, 0, shard) +
         instance_list("LUCID_FOR_NUMERIC_TYPES", kTypes, kFirstNumeric, shard) +
         instance_list("LUCID_FOR_FLOAT_TYPES", kTypes, kFirstFloat, shard) +
         instance_list("LUCID_FOR_WIDTHS", kWidths, 0, shard) + "#define LUCID_UNTYPED_SHARD " +
         (shard.empty() ? "1" : "0") + "\n" + module.body;
}

const char* type_suffix(int dtype) {
  LUCID_CHECK(dtype >= 0 && dtype < kNumDTypes, "internal: no dtype ", dtype);
  return kTypes[dtype].suffix;
}

const char* width_suffix(size_t bytes) {
  for (size_t k = 0; k < 4; ++k)  // kWidths holds 1, 2, 4 and 8 bytes
    if (bytes == size_t(1) << k) return kWidths[k].suffix;
  fail<Error>("internal: no element width ", bytes);
}

}  // namespace lucid::cuda
