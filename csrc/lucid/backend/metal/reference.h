#pragma once
// The Metal backend's plans run on the host: an Executable that follows a
// compiled step's StepPlan (the same feeds, targets, host draws and in-place
// buffer plan executable.mm uses) or each node's eager plan (the same
// single-op graphs kernels.mm uses), with the reference interpreter in place
// of MPSGraph. Tests compare it with the CPU executable; it is built on every
// platform and is never registered as a device.
#include <memory>
#include <string>
#include <vector>

#include "lucid/backend/metal/interpreter.h"
#include "lucid/graph/executable.h"

namespace lucid::metal {

struct ReferenceOptions {
  bool eager = false;  // each node through its eager plan instead of one step plan
  InterpreterOptions interpreter;
};

std::shared_ptr<graph::Executable> compile_reference(graph::Graph g, std::vector<graph::RandomKeyFeed> random_feeds,
                                                     const ReferenceOptions& options);

// Every primitive kind with a Metal form, by name, with how it is lowered
// ("graph", "host", "blit").
std::vector<std::pair<std::string, std::string>> metal_kinds();

}  // namespace lucid::metal
