"""Chapter 08: optimizers and learning-rate schedulers (``torch.optim``).

* ``optimizer``     ``Optimizer``: param groups (exercise 8.1), zero_grad, state_dict
* ``sgd``           ``SGD`` and its update ``sgd`` (exercise 8.2)
* ``adam``          ``Adam``, ``AdamW`` and their update ``adam`` (exercise 8.3)
* ``lr_scheduler``  ``LambdaLR`` (exercise 8.4), ``StepLR``, ``MultiStepLR``, ``ExponentialLR``,
                    ``CosineAnnealingLR``
* ``plateau``       ``ReduceLROnPlateau`` (stepped with a metric)
* ``lr_combinators`` ``ConstantLR``, ``LinearLR`` (warm-up), ``SequentialLR``, ``ChainedScheduler``
* ``grad_view``     ``TorchGradView``, ``scale_loss``: a GradScaler driving these optimizers

Gradient clipping is ``minikernel.clip_grad`` (exercise 8.5). Every update computes
with numpy on the parameters' own memory, so the optimizers work whether or not
chapter 02's kernels are finished.
"""
from . import lr_scheduler
from .adam import Adam, AdamW
from .grad_view import TorchGradView, scale_loss
from .lr_combinators import ChainedScheduler, ConstantLR, LinearLR, SequentialLR
from .lr_scheduler import CosineAnnealingLR, ExponentialLR, LambdaLR, LRScheduler, MultiStepLR, StepLR
from .optimizer import Optimizer, required
from .plateau import ReduceLROnPlateau
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler", "required", "TorchGradView", "scale_loss",
           "LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
           "ReduceLROnPlateau", "ConstantLR", "LinearLR", "SequentialLR", "ChainedScheduler"]
