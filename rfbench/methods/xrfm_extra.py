"""The registry's path to xRFM (rfbench/methods/xrfm.py): the same estimators, in a module that imports
the optional ``xrfm`` package when it is imported, so that a run that names the method where the extra
is not installed stops before any task with one line (rfbench.registry.import_estimator: "... needs
'xrfm', which is not installed here (... pip install 'rfbench[xrfm]' ...)"), exit 2.
rfbench.methods.xrfm itself imports without the extra."""

from __future__ import annotations

from rfbench.methods.xrfm import XRFMClassifier, XRFMRegressor, import_xrfm

import_xrfm()

__all__ = ["XRFMClassifier", "XRFMRegressor"]
