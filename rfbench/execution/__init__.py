"""The execution layer: runs tasks and writes their records.

``runner`` plans the tasks of a run (datasets x methods x budgets x folds x seeds) from a
:class:`~rfbench.execution.runconfig.RunConfig`, skips those done, and hands work items to an
executor (``pool``: local worker lanes; ``dask_pool``: a dask cluster; both through ``executor``);
``tasks.execute`` runs one in a worker (data, folds, the estimator) and returns its records, which
the runner writes into the store; ``estimate`` says how long the tasks not run yet will take. It
imports methods, data, the store and the shared definitions, never the experiments or reporting
layers.
"""
