#pragma once
// Kernel modules compiled from source by NVRTC to the device's own machine
// code (SASS, never PTX a driver might not load), cached on disk under
// $LUCID_CUDA_CACHE or ~/.cache/lucid/cuda. Needs NVRTC only, no device: CI
// compiles every kernel this way.
//
// Compiling is the bulk of a cold first step, so it runs side by side: when
// the device is first used, the fixed modules' shards (sources.h) are queued
// for a few background threads, the shards most programs use first; a
// caller needing a module still queued takes it and compiles it itself.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lucid::cuda {

// One module to compile: its whole source and options.
struct ModuleJob {
  std::string source;  // complete: the prelude included
  std::string arch;    // "sm_90"
  // false: no contraction of a*b+c into one rounding (generated kernels
  // fusing several ops round each op's result, as the ops' own kernels do).
  bool fmad = true;
  std::string label;  // what it is, for LUCID_CUDA_COMPILE_LOG=1 ("elementwise[f32]")
};

// A 64-bit hash of a source, naming it in caches.
uint64_t source_hash(const std::string& source);

// The module's machine code: from the disk cache when compiled before, else
// compiled now (Error with NVRTC's log when it does not compile).
std::string compile_cubin(const ModuleJob& job);

// Queues `job` under `key` for the background threads, ahead of the jobs
// queued before when `urgent` (needed now rather than likely needed);
// nothing when `key` is queued (and not yet taken).
void precompile(const std::string& key, ModuleJob job, bool urgent = false);
// The machine code of `job`, queued under `key` or not: waits for it when a
// background thread is compiling it, compiles it here when it is still
// queued or was never queued.
std::string take_cubin(const std::string& key, const ModuleJob& job);
// How many background threads compile (one fewer than the cores, 1 to 8).
size_t background_threads();

// One shard of a fixed module (sources.h): its job and its key.
ModuleJob fixed_shard_job(const std::string& module, const std::string& shard, const std::string& arch);
std::string fixed_shard_key(const std::string& module, const std::string& shard);
// Queues every shard of every fixed module that is not in the disk cache.
void precompile_fixed_modules(const std::string& arch);

// Compiles every shard of every fixed module for `arch` (or finds it in the
// disk cache), on the background threads; returns the shards that failed
// ("module[shard]") with NVRTC's log (empty when all compile).
std::vector<std::pair<std::string, std::string>> compile_fixed_modules(const std::string& arch);

}  // namespace lucid::cuda
