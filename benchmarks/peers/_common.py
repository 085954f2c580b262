"""What a framework adapter hands back to the worker."""


class Unavailable(Exception):
    """The variant has no meaning for this workload (not a failure)."""


class Runner:
    """`step()` runs one step, synchronised (the timed unit); it returns a
    handle that `loss_value` turns into a float outside the timed region."""

    def __init__(self, step, n_params, loss_value=None, note="", extra=None, param_shapes=None):
        self.step = step
        self.n_params = n_params
        self.param_shapes = param_shapes  # [(name, shape)] where names are comparable
        self._loss_value = loss_value
        self.note = note
        self.extra = extra or {}

    def loss_value(self, handle):
        if handle is None or self._loss_value is None:
            return None
        return float(self._loss_value(handle))


def named_shapes(model):
    return [(name, list(p.shape)) for name, p in model.named_parameters()]


def train_loop(model, loss_fn, opt, x, y):
    """The eager loop every PyTorch-shaped variant runs."""

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def optim_loop(opt):
    def step():
        opt.step()

    return step
