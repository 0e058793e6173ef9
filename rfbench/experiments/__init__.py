"""The experiments layer: what a published table asks for and how it is judged.

A spec (bench/*.yaml, :mod:`rfbench.experiments.spec`) declares a table's runs; ``reproduce`` runs
and checks it, ``check`` compares its cells with the published ones, ``status`` counts what is left,
``regress`` replays its fast ci configuration, ``baselines`` and ``compare`` put a user's method
beside the shipped results, and ``html_page`` builds a spec's page. It drives the execution layer and
renders through the reporting layer; nothing below imports it.
"""
