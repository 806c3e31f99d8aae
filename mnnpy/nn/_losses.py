"""Loss modules with ``torch.nn``'s names and arguments, calling ``mnnpy.nn.functional``.
Class weights and ``pos_weight`` are buffers, as in PyTorch's state dicts."""
import numpy as np

from . import functional as nnf
from ._module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss"]


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated size_average / reduce arguments, mapped to ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = _legacy_reduction(size_average, reduce, reduction)

    def extra_repr(self):
        return f"reduction={self.reduction!r}"


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", None if weight is None else np.asarray(nnf._var(weight).read(), np.float32))


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = int(ignore_index)
        self.label_smoothing = float(label_smoothing)

    def forward(self, input, target):  # noqa: A002
        return nnf.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = int(ignore_index)

    def forward(self, input, target):  # noqa: A002
        return nnf.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return nnf.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return nnf.l1_loss(input, target, self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = float(beta)

    def forward(self, input, target):  # noqa: A002
        return nnf.smooth_l1_loss(input, target, self.reduction, self.beta)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):  # noqa: A002
        return nnf.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", None if weight is None else np.asarray(nnf._var(weight).read(), np.float32))
        self.register_buffer("pos_weight",
                             None if pos_weight is None else np.asarray(nnf._var(pos_weight).read(), np.float32))

    def forward(self, input, target):  # noqa: A002
        return nnf.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = bool(log_target)

    def forward(self, input, target):  # noqa: A002
        return nnf.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
