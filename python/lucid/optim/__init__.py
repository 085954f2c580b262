"""Optimizers and learning-rate schedulers with torch.optim's names,
arguments, defaults, math, errors and state_dict layout.

The element-wise optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta,
Adamax, NAdam, RAdam, ASGD, Rprop, SparseAdam) run on engine optimizers:
their update rules are written once in C++ (csrc/lucid/optim/rules.h) and
applied in one fused, multi-threaded pass over each parameter. LBFGS runs
eagerly with whole-tensor ops.
"""
from . import lr_scheduler, swa_utils
from .adam import Adam, Adamax, AdamW, NAdam, RAdam, SparseAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .sgd import ASGD, SGD, Rprop

__all__ = [
    "ASGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SGD",
    "SparseAdam",
    "lr_scheduler",
    "swa_utils",
]
