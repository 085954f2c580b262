"""Gradient checks by finite differences (torch.autograd.gradcheck and
gradgradcheck): the analytical Jacobian (reverse mode, one vjp per output
element, computed twice to catch nondeterminism) against central
differences, with PyTorch's tolerances, checks and messages.

Differences from PyTorch: `fast_mode=True` runs the full (slow-mode) check,
which is stricter; `check_batched_grad` and `check_undefined_grad` add no
further check (Lucid's vmap runs one call per slice, so batched gradients
are the per-slice ones, and undefined output gradients are materialised as
zeros before a backward runs); `check_forward_ad` compares Jacobian columns
from the double-backward trick (there is no separate forward mode).
"""
import warnings

from .. import _C

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Error raised by gradcheck and gradgradcheck."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if o.requires_grad)


def _check_inputs(tupled_inputs):
    any_requires_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if isinstance(inp, _C.Tensor) and inp.requires_grad:
            if inp.dtype != _C.dtype.float64:
                warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating point or "
                              "complex. This check will likely fail if all the inputs are not of double precision "
                              "floating point or complex. ", stacklevel=3)
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs "
                                   "that are non-overlapping to be able to compute the numerical gradients correctly. "
                                   "You should call .contiguous on the input before passing it to gradcheck.")
            any_requires_grad = True
    if not any_requires_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")


def _diff_input_indices(tupled_inputs):
    return [i for i, x in enumerate(tupled_inputs) if isinstance(x, _C.Tensor) and x.requires_grad]


def _numerical_jacobian(func, tupled_inputs, eps):
    """J[j][i]: d outputs[i] / d inputs[j] (differentiable inputs j) by central
    differences, as an (input numel, output numel) matrix."""
    import lucid

    # Not under no_grad: a function may differentiate inside (gradgradcheck's does).
    def run(args):
        return tuple(o.detach() for o in _as_tuple(func(*args)) if isinstance(o, _C.Tensor))

    base = run(tupled_inputs)
    jacobians = []
    for j in _diff_input_indices(tupled_inputs):
        x = tupled_inputs[j].detach()
        flat = x.reshape(-1)
        columns = [[] for _ in base]
        for k in range(x.numel()):
            deltas = []
            for sign in (-1.0, 1.0):
                shifted = flat.clone()
                shifted[k] = shifted[k] + sign * eps
                args = list(tupled_inputs)
                args[j] = shifted.reshape(x.shape).requires_grad_(True)
                deltas.append(run(tuple(args)))
            for i, (lo, hi) in enumerate(zip(*deltas)):
                columns[i].append(((hi - lo) / (2 * eps)).reshape(-1))
        jacobians.append([lucid.stack(c, 0) if c else lucid.zeros(0, o.numel(), dtype=o.dtype)
                          for c, o in zip(columns, base)])
    return base, jacobians


def _analytical_jacobian(tupled_inputs, output, nondet_tol, check_grad_dtypes):
    """Rows of d output / d inputs by one vjp per output element, computed
    twice: a difference beyond nondet_tol means a nondeterministic backward."""
    import lucid

    diff_inputs = [tupled_inputs[j] for j in _diff_input_indices(tupled_inputs)]

    def rows():
        per_input = [[] for _ in diff_inputs]
        types_ok, sizes_ok = True, True
        for k in range(output.numel()):
            grad_output = lucid.zeros(output.numel(), dtype=output.dtype, device=output.device)
            grad_output[k] = 1.0
            grads = lucid.autograd.grad([output], diff_inputs, [grad_output.reshape(output.shape)],
                                        retain_graph=True, allow_unused=True)
            for j, (g, inp) in enumerate(zip(grads, diff_inputs)):
                if g is None:
                    g = lucid.zeros_like(inp)
                else:
                    types_ok &= g.dtype == inp.dtype
                    sizes_ok &= tuple(g.shape) == tuple(inp.shape)
                per_input[j].append(g.reshape(-1))
        jac = [lucid.stack(r, 1) if r else lucid.zeros(inp.numel(), 0, dtype=inp.dtype)
               for r, inp in zip(per_input, diff_inputs)]
        return jac, types_ok, sizes_ok

    jac1, types_ok, sizes_ok = rows()
    jac2, _, _ = rows()
    reentrant = all(bool(((a - b).abs() <= nondet_tol).all()) for a, b in zip(jac1, jac2))
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError("Backward is not reentrant, i.e., running backward with same input and grad_output "
                             "multiple times gives different values, although analytical gradient matches numerical "
                             f"gradient.The tolerance for nondeterminism was {nondet_tol}.")
    return jac1


def _forward_jacobian(func, tupled_inputs, output_index):
    """Columns of d outputs[output_index] / d inputs, one double-backward jvp per input element."""
    import lucid

    from .functional import jvp

    indices = _diff_input_indices(tupled_inputs)
    jac = []
    for j in indices:
        x = tupled_inputs[j]
        cols = []
        for k in range(x.numel()):
            def f(xj, _j=j):
                args = list(tupled_inputs)
                args[_j] = xj
                return _differentiable_outputs(func(*args))[output_index]

            tangent = lucid.zeros(x.numel(), dtype=x.dtype, device=x.device)
            tangent[k] = 1.0
            _, col = jvp(f, x.detach(), tangent.reshape(x.shape))
            cols.append(col.reshape(-1))
        jac.append(lucid.stack(cols, 0))
    return jac


def _notallclose_msg(analytical, numerical, output_idx, input_idx, forward=False):
    mode = "computed with forward mode " if forward else ""
    return (f"Jacobian {mode}mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
            f"numerical:{numerical}\nanalytical:{analytical}\n")


def _gradcheck(func, tupled_inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes, check_forward_ad,
               check_backward_ad):
    import lucid

    _check_inputs(tupled_inputs)
    func_out = _as_tuple(func(*tupled_inputs))
    outputs = _differentiable_outputs(func_out)
    _, numerical = _numerical_jacobian(func, tupled_inputs, eps)
    if not outputs:
        for per_input in numerical:
            for jac in per_input:
                if bool((jac != 0).any()):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    # numerical[j][i] over every tensor output; keep the differentiable ones, indexed as `outputs`
    keep = [i for i, o in enumerate(o for o in func_out if isinstance(o, _C.Tensor)) if o.requires_grad]
    if check_backward_ad:
        for i, o in enumerate(outputs):
            analytical = _analytical_jacobian(tupled_inputs, o, nondet_tol, check_grad_dtypes)
            for j, a in enumerate(analytical):
                n = numerical[j][keep[i]]
                if not lucid.allclose(a, n, rtol, atol):
                    raise GradcheckError(_notallclose_msg(a, n, i, j))
    if check_forward_ad:
        for i in range(len(outputs)):
            for j, a in enumerate(_forward_jacobian(func, tupled_inputs, i)):
                n = numerical[j][keep[i]]
                if not lucid.allclose(a, n, rtol, atol):
                    raise GradcheckError(_notallclose_msg(a, n, i, j, forward=True))
    return True


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """True when the gradients of `func` at `inputs` (the tensors that require
    grad, in float64 for a meaningful check) match finite differences:
    |analytical - numerical| <= atol + rtol |numerical|. A mismatch raises
    GradcheckError (or returns False with raise_exception=False)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    tupled_inputs = _as_tuple(inputs)
    try:
        return _gradcheck(func, tupled_inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes, check_forward_ad,
                          check_backward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False):
    """gradcheck of the gradients: checks the second derivatives of `func`
    (with `grad_outputs`, random in [-1, 1) by default, also differentiated)."""
    import lucid

    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(
            lucid.testing.make_tensor(tuple(x.shape), dtype=x.dtype if x.dtype.is_floating_point else lucid.float64,
                                      device=x.device, low=-1, high=1, requires_grad=True,
                                      noncontiguous=gen_non_contig_grad_outputs) for x in outputs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_indices = set(_diff_input_indices(tupled_inputs))
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(x.requires_grad_() if i in diff_input_indices else x
                           for i, x in enumerate(args[:-num_outputs]))
        outputs = _differentiable_outputs(func(*input_args))
        grads = tuple(x.requires_grad_() if i in diff_grad_output_indices else x
                      for i, x in enumerate(args[-num_outputs:]))
        diff_input_args = [x for i, x in enumerate(input_args) if i in diff_input_indices]
        grad_inputs = lucid.autograd.grad(list(outputs), diff_input_args, list(grads), create_graph=True,
                                          allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev, masked=masked)
