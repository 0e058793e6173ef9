"""Which file format the shipped baselines use (issue 36 item 3), by measurement: the committed
results directories of every spec (what ``rfbench baselines --write`` reads), each written as one
file per directory in every candidate format, and for the whole set: the total size and the time to
read every file back into a pandas frame (Arrow's readers for Parquet and Feather, pandas's
for CSV) (median of ``--repeat`` reads, in this process, warm page
cache). Also measured, for the decision whether results/ keeps its per-task JSON files: the
records as they are committed (records/*.json, results.csv) and the time ``store.load_results``
takes on them, with the records index (the normal case) and without it (a fresh clone).

Candidates: Parquet (pyarrow) with zstd at levels 3 and 19 and with snappy; Feather (Arrow IPC)
with zstd and lz4; CSV compressed by gzip (level 9) and xz (preset 9). Every candidate holds the
same table: :func:`rfbench.experiments.baselines.results_table`.

    python bench/perf/baseline_formats.py [--repeat 5] [--output results/baseline-formats.json]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import lzma
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def writers():
    import pandas as pd
    import pyarrow.csv as pacsv
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    def parquet(codec, level=None):
        def write(table, path):
            pq.write_table(table, path, compression=codec, compression_level=level, use_dictionary=True,
                           write_statistics=False)
        return write

    def feather_(codec):
        return lambda table, path: feather.write_feather(table, path, compression=codec)

    def csv(opener):
        def write(table, path):
            buf = io.BytesIO()
            pacsv.write_csv(table, buf)
            with opener(path) as fh:
                fh.write(buf.getvalue())
        return write

    return {
        "parquet-zstd19": (".parquet", parquet("zstd", 19), lambda p: pq.read_table(p).to_pandas()),
        "parquet-zstd3": (".parquet", parquet("zstd", 3), lambda p: pq.read_table(p).to_pandas()),
        "parquet-snappy": (".parquet", parquet("snappy"), lambda p: pq.read_table(p).to_pandas()),
        "feather-zstd": (".feather", feather_("zstd"), lambda p: feather.read_table(p).to_pandas()),
        "feather-lz4": (".feather", feather_("lz4"), lambda p: feather.read_table(p).to_pandas()),
        "csv-gzip9": (".csv.gz", csv(lambda p: gzip.open(p, "wb", compresslevel=9)),
                      lambda p: pd.read_csv(p)),
        "csv-xz9": (".csv.xz", csv(lambda p: lzma.open(p, "wb", preset=9)),
                    lambda p: pd.read_csv(p)),
    }


def timed(fn, repeat):
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return {"median_s": statistics.median(runs), "runs_s": runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--output", default=None, help="write the measurements as JSON here (default: print)")
    args = ap.parse_args()

    from rfbench.experiments import baselines
    from rfbench.store import INDEX_NAME, load_results, open_run

    sources = baselines.sources()
    tables = {res.name: baselines.results_table(res, spec) for spec, res in sources}
    out = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"), "cpu_count": os.cpu_count(),
           "load_average": list(os.getloadavg()), "directories": len(tables),
           "rows": sum(t.num_rows for t in tables.values()), "formats": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (suffix, write, read) in writers().items():
            paths = []
            for d, table in tables.items():
                p = Path(tmp) / f"{d}.{name}{suffix}"
                write(table, p)
                paths.append(p)
            sizes = {p.name.split(".")[0]: p.stat().st_size for p in paths}
            out["formats"][name] = {"total_bytes": sum(sizes.values()), "bytes": sizes,
                                    "read_all": timed(lambda paths=paths, read=read: [read(p) for p in paths],
                                                      args.repeat)}
    records = {"json_files": 0, "json_bytes": 0, "results_csv_bytes": 0, "disk_bytes": 0}
    for _, res in sources:
        for f in (res / "records").glob("*.json"):
            records["json_files"] += 1
            records["json_bytes"] += f.stat().st_size
            records["disk_bytes"] += f.stat().st_blocks * 512
        if (res / "results.csv").is_file():
            records["results_csv_bytes"] += (res / "results.csv").stat().st_size
    dirs = [str(res) for _, res in sources]

    def load_each():
        for d in dirs:
            load_results([d], mixed_protocols=True)

    def cold():
        for d in dirs:
            (Path(d) / INDEX_NAME).unlink(missing_ok=True)
        from rfbench import store
        store.OPEN_RUNS.clear()
        load_each()

    def warm():
        from rfbench import store
        store.OPEN_RUNS.clear()
        load_each()

    records["load_results_no_index"] = timed(cold, 1)       # rebuilds the indexes (a fresh clone)
    records["load_results_indexed"] = timed(warm, args.repeat)
    open_run(dirs[0])
    out["records"] = records
    text = json.dumps(out, indent=2)
    if args.output:
        Path(args.output).write_text(text + "\n")
        print(f"wrote {args.output}")
    for name, f in out["formats"].items():
        print(f"{name:16s} {f['total_bytes'] / 1024:8.0f} KiB  read all {f['read_all']['median_s'] * 1000:7.1f} ms")
    print(f"records: {records['json_files']} JSON files, {records['json_bytes'] / 2**20:.1f} MiB "
          f"({records['disk_bytes'] / 2**20:.1f} MiB on disk), results.csv {records['results_csv_bytes'] / 2**20:.1f} MiB; "
          f"load_results {records['load_results_indexed']['median_s']:.2f} s indexed, "
          f"{records['load_results_no_index']['median_s']:.2f} s without the index")


if __name__ == "__main__":
    main()
