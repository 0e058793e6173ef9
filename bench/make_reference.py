"""Write a regression reference table (published-table layout) from a results directory.

    python bench/make_reference.py RUN_DIR bench/reference/NAME.csv

Used for the CI regression of methods whose fast configuration (subsampled, small n) has no
published counterpart: the reference is the output of a reviewed version, and `rfbench check`
then fails when a change moves a cell by more than the spec's tolerance.
"""

import sys

from rfbench.store import atomic_write_text, load_results


def main(run_dir: str, target: str) -> None:
    df = load_results([run_dir])
    done = df[df["status"] == "done"].astype({"error": float, "total_s": float})
    cells = (done.groupby(["dataset", "method", "n_features"])
             .agg(error_mean=("error", "mean"), error_std=("error", "std"), walltime_s=("total_s", "median"),
                  folds=("fold", "count"))
             .reset_index())
    atomic_write_text(__import__("pathlib").Path(target), cells.to_csv(index=False, float_format="%.4f"))
    print(f"wrote {target}: {len(cells)} cells")


if __name__ == "__main__":
    main(*sys.argv[1:3])
