"""Optimizers (torch.optim's and MNN.optim's names), learning-rate schedules, gradient clipping,
planned training steps and a small training loop.

``opt = SGD(model, lr=0.1, momentum=0.9)``; ``opt.step(loss)`` trains on a loss Var built from
the model; ``step = opt.compile(lambda x, y: loss_fn(model(x), y), x0, y0)`` plans the whole
step once per batch shape and ``step(x, y)`` runs it.
"""
from . import lr_scheduler
from .loop import evaluate, fit
from .optimizer import (ADAM, L1, L1L2, L2, SGD, Adam, AdamW, Grad, Optimizer, Regularization_L1,
                        Regularization_L1L2, Regularization_L2, Regularization_Method, RMSprop, clip_grad_norm_,
                        clip_grad_value_)
from .train_step import Predictor, TrainStep

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "ADAM", "clip_grad_norm_", "clip_grad_value_",
           "Regularization_Method", "L1", "L2", "L1L2", "Grad",
           "Regularization_L1", "Regularization_L2", "Regularization_L1L2", "TrainStep", "Predictor", "fit",
           "evaluate", "lr_scheduler"]
