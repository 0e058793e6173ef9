"""Methods: one scikit-learn estimator per file; the registry entries live in ``methods.yaml``."""
