#pragma once
// Lucid's C++ API: everything a native app needs to build a model from ops,
// train it with eager autograd and the engine optimizers, compile a fused
// training step, and read and write checkpoints Python's lucid.load/save
// share. Link Lucid::core (find_package(Lucid CONFIG REQUIRED)).
//
// The surface, by area (each header can be included on its own):
//   lucid/core/tensor.h     Tensor, TensorMeta; dtype.h, shape.h, device.h
//                           (Device, parse_device, device_available)
//   lucid/core/error.h      Error and its kinds (InvalidArgument, TypeError,
//                           IndexError, NotImplementedError): the exceptions
//                           Python shows as lucid.InvalidArgument etc., with
//                           the same messages
//   lucid/ops/ops.h         every op (creation, random, elementwise,
//                           reductions, matmul, shape, indexing, softmax,
//                           in-place) and the C++ operators on tensors
//   lucid/ops/conv.h        linear, conv1d/conv2d, max/avg pooling
//   lucid/api/data.h        from_vector(), to_vector(), item()
//   lucid/api/autograd.h    backward(), grad(), GradModeGuard, NoGradGuard
//   lucid/api/optimizer.h   optim::Optimizer: torch.optim's kinds, default
//                           options, param groups, step(), zero_grad()
//   lucid/optim/engine.h    optim::EngineOptimizer: one group's engine and
//                           state (state_entries / set_state)
//   lucid/api/compile.h     compile::FusedStep (fused_step/train_step) and
//                           compile::CompiledOptimizer (compile_optimizer)
//   lucid/compile/step.h    compile::CompiledStep, the one compiled-step
//                           object both (and Python) are built on;
//                           grad_scaler.h its loss-scaling state
//   lucid/graph/*.h         the tracer, IR, passes and Executable the
//                           compiled steps are built on
//   lucid/api/serialization.h  save(), load(), Value, CheckpointError
//   lucid/checkpoint/*.h    the checkpoint format itself (format.h documents
//                           it), CRC-32C, safetensors files
//   lucid/backend/cpu/parallel.h  cpu::set_num_threads / num_threads
#include "lucid/api/autograd.h"
#include "lucid/api/compile.h"
#include "lucid/api/data.h"
#include "lucid/api/optimizer.h"
#include "lucid/api/serialization.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/compile/grad_scaler.h"
#include "lucid/compile/step.h"
#include "lucid/core/device.h"
#include "lucid/core/dtype.h"
#include "lucid/core/error.h"
#include "lucid/core/shape.h"
#include "lucid/core/tensor.h"
#include "lucid/graph/executable.h"
#include "lucid/graph/ir.h"
#include "lucid/graph/passes.h"
#include "lucid/graph/graph_tracer.h"
#include "lucid/graph/trace_hook.h"
#include "lucid/ops/conv.h"
#include "lucid/ops/dispatch.h"
#include "lucid/ops/ops.h"
#include "lucid/optim/engine.h"
#include "lucid/optim/hyper.h"
