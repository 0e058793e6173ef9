"""rfbench: reproduce and extend the result tables of four papers on learned and random features."""

import os

__version__ = "0.1.0"

# NumPy and SciPy each load their own OpenBLAS, so a process has two BLAS thread pools. OpenBLAS
# threads spin for 2^28 cycles (about 0.1 s) after every call before they sleep; on a machine with
# few cores the spinning threads of one pool take the cores that the other pool's next call needs.
# With 2^4 cycles, two BLAS threads stop being slower than one (one outer fold on 2 cores, 1 thread
# vs 2 threads: rff-gauss n=100 cal-housing 0.86 s vs 2.04 s before, 0.63 s after; lkrf n=100
# kinematics 0.33 vs 1.06 s before, 0.28 s after). Set before NumPy loads OpenBLAS, so on import of
# rfbench (the CLI's first import); a value the user set is kept.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
