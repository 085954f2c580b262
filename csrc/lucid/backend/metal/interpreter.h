#pragma once
// A reference interpreter of plans: each MPSGraph operation a plan uses, run
// on the host with the semantics Apple documents for it (docs/metal.md lists
// each assumption and its page). It exists so that the CPU suite can run the
// Metal backend's lowering of every primitive and of whole compiled steps and
// compare with the CPU backend; it is not a device and not fast.
//
// Where the documentation leaves a result open, the interpreter either runs
// both readings (options below; the lowering must give the same answer under
// each) or refuses what a plan must never rely on (an inexact integer
// division, a float-to-integer cast of a non-integral value, a cast to bool,
// an index out of range in a gather) with an Error naming the node.
#include <vector>

#include "lucid/backend/metal/plan.h"

namespace lucid::metal {

struct InterpreterOptions {
  // moduloWithPrimaryTensor of floats: fmod (the sign of the dividend) or
  // floor-mod (the sign of the divisor).
  bool float_modulo_is_floor = false;
  // Whether a reduction's result drops the reduced axes instead of keeping
  // them with extent 1.
  bool reductions_drop_axes = false;
};

// Runs `plan`: `inputs` holds the bytes of each plan input (its dtype and
// shape, row-major); returns the bytes of each target.
std::vector<std::vector<unsigned char>> interpret(const Plan& plan, const std::vector<const void*>& inputs,
                                                  const InterpreterOptions& options = {});

}  // namespace lucid::metal
