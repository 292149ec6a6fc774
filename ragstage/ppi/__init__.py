"""Gold for a few questions: a judge labels every request, people label a seeded random sample.

* :mod:`~ragstage.ppi.means`: the estimators (PPI++ mean and interval, paired differences,
  stratified means, joint intervals, the planner);
* :mod:`~ragstage.ppi.agreement`: the judge against gold on the sample (confusion matrix, Cohen's kappa);
* :mod:`~ragstage.ppi.coverage`: the seeded simulation that says where the intervals hold;
* :mod:`~ragstage.ppi.sample`: the draw and its file (``ragstage sample``);
* :mod:`~ragstage.ppi.estimate`: silver and gold traces paired, one row per bucket
  (``ragstage attribute --gold-sample``).

numpy and scipy only; ``ppi_py`` is the tests' reference, not a dependency.
"""
