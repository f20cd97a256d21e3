"""Chapter 06: automatic mixed precision — autocast's dtype rules and GradScaler.

* ``scaling``         the exercises (6.1–6.5) and ``OptState``
* ``grad_scaler``     ``GradScaler``, torch.amp.GradScaler's API built on them
* ``autocast_rules``  which dtype each op produces under autocast, measured
* ``history``         ``AmpHistory``: loss, scale and skipped steps of a training run
* ``replay``          ``play``: replay GradScaler calls on any scaler class and report
"""
from . import scaling
from .autocast_rules import Column, autocast_table, format_table
from .grad_scaler import GradScaler
from .history import AmpHistory
from .replay import play, run_unscale, run_update, torch_transition
from .scaling import OptState

__all__ = ["GradScaler", "OptState", "AmpHistory", "Column", "autocast_table", "format_table", "play",
           "run_unscale", "run_update", "torch_transition", "scaling"]
