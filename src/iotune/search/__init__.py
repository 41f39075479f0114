"""Search strategies and the trial loop.

- strategies: genetic (H5Evolve's preset on Optuna's NSGA-II), default (TPE, model-based,
  warm-started), random.
- warmstart: the default settings and the space's rule-based guesses, queued as first trials.
- capping: when to stop a trial that is clearly slower than the incumbent.
- noise: robust estimates per configuration, leaders, a paired exact test.
- loop: ask -> evaluate -> tell, shared by `iotune tune` and the bench replay.
"""

from iotune.search.strategies import STRATEGIES, Strategy, get_strategy

__all__ = ["STRATEGIES", "Strategy", "get_strategy"]
