"""The reporting layer: reads results and renders them.

``cells`` defines a results table's cells (metrics, seeds, completeness, common folds) once;
``report`` renders tables (text, markdown, LaTeX, CSV, HTML fragments) with ``stats``' tests,
``plot`` draws the figures, ``published`` reads the papers' published tables, ``html_markup`` holds
the escaped HTML building blocks and ``figures_gbrff`` draws the GBRFF paper's figures. It reads the
results store and runs nothing of the experiments.
"""
