#pragma once
// Which computation the CPU convolution kernels use (conv2d_kernels.cpp):
// unfolding blocks of the input for a product, or the direct stride-1 form
// that reads the input at each tap's shift. By default each convolution
// takes the one that wastes least for its shape; tests pin one to check
// both on every shape. `Direct` applies where that form exists (stride 1,
// a build with the SIMD tiles) and is the unfolding form elsewhere.
namespace lucid::cpu {

enum class ConvPath { Auto, Unfold, Direct };
void set_conv_path(ConvPath path);
ConvPath conv_path();

}  // namespace lucid::cpu
