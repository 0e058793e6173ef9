"""Prepare, on this machine, what the GPU machine of the `device` tool needs for the prepared GPU runs
(bench/perf/uci_gpu.py, bench/perf/gpu.py, and a suite run with --device cuda), so that a session
that is lent one spends its 15 device-minutes measuring, not setting up.

The device tool sends the checkout and nothing beside it: not ../shared (the dataset mirror), and its
image has PyTorch, GPyTorch, scikit-learn, pandas, pyarrow and the rest of rfbench's needs but not
LightGBM nor xRFM (docs/device.md). So:

    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/gpu_kit.py --sets uci-large      # uci_gpu.py
    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/gpu_kit.py --sets torgo,gfc-tables   # gpu.py

makes ``.device-data/`` hold exactly the mirror files of those sets (data, appended files, split
masks; their relative paths kept; a set with a file over ``--max-file-mib`` left out and named:
ujiindoorloc's 41 MiB would not fit, and gpu.py projects a set it cannot load), downloads the wheels of the missing packages for the image's Python
(3.12, manylinux x86-64) into ``.whl/`` (both ignored through ``.git/info/exclude``), checks that
what travels (the tracked files + both folders) stays under the tool's 64 MiB, and prints the
``carry`` list and the command to give ``run``: the wheels installed into /tmp/site, the mirror read
from ``.device-data``, one device script, its JSON written under $OUT.

``--check`` instead imports rfbench with LightGBM, xRFM, OpenML, liac-arff, scikit-posthocs and dask
made unimportable (as on the image before the wheels) and loads one fold of every staged set from
``.device-data`` as the runner does: what the device scripts need is there and nothing else is.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / ".device-data"
WHEELS = REPO / ".whl"
LIMIT_MIB = 64
#: packages rfbench's device runs import that the image lacks (docs/device.md; KINDS.md's package list)
MISSING = ["lightgbm==4.7.0", "xrfm==0.4.5"]
GROUPS = {
    "torgo": lambda reg: sorted(n for n, d in reg.datasets.items() if "torgo" in d.suites),
    "uci-large": lambda reg: ["uci-kin40k", "uci-protein", "uci-tamielectric", "uci-keggdirected",
                              "uci-keggundirected"],
    # the intermediate sets above the CPU's exact-GP N (3500 rows) and below the five largest: gp-sod
    # and svgp there cost the 2 cores 7 and 2-7 CPU-minutes a split, a GPU seconds (uci-cost.md)
    "uci-intermediate": lambda reg: ["uci-sml", "uci-parkinsons", "uci-pumadyn32nm", "uci-pol", "uci-elevators",
                                     "uci-bike"],
    "gfc-tables": lambda reg: sorted({d for name in ("gfc2016-table1", "gfc2016-tables2-3", "gfc2016-table4")
                                      for d in _spec_datasets(name, reg)}),
}
DEVICE_COMMANDS = {
    "uci_gpu": "python3 bench/perf/uci_gpu.py --device cuda --budget-s 420 --factor-bytes 8589934592 "
               "--cpu-fits 3 --cpu-threads 4 --output $OUT/uci-gpu.json",
    # after uci_gpu (2026-11-30): the exact GP on every training row of the three sets, the GP row of
    # FALKON's "10x less fit time" (issue 44 item 3), to its own file
    "uci_full_gp": "python3 bench/perf/uci_gpu.py --device cuda --only-full-gp --full-gp-s 240 --budget-s 560 "
                   "--output $OUT/uci-gpu-full-gp.json",
    "gpu": "python3 bench/perf/gpu.py --device cuda --budget-s 420 --slots 4 --output $OUT/gpu-benchmark.json",
    # the device rows of the five largest UCI sets (issue 43 item 4) that the 2 cores cannot run, seeded
    # with the committed records of those sets so that it resumes where the last GPU session stopped
    # (2026-11-30: 202 tasks); a run stopped by the timeout keeps its finished tasks; its directory
    # comes back as one archive (the tool returns at most 8 files), merged as the background runs are
    "uci_large_run": "mkdir -p /tmp/uci-large/records && cp results/uci-splits/records/uci-{kin40k,protein,"
                     "tamielectric,keggdirected,keggundirected}__*.json /tmp/uci-large/records/; "
                     "timeout -s TERM 480 python3 -m rfbench.cli run --datasets uci-kin40k,uci-protein,"
                     "uci-tamielectric,uci-keggdirected,uci-keggundirected --protocol published --methods "
                     "svgp,xrfm,alc-q1,alc-q2,alc-q5,gp-sod --features 100,500 --device cuda --gpu-slots 6 --jobs 6 "
                     "--threads 2 --out /tmp/uci-large --quiet --no-report; "
                     "tar czf $OUT/uci-large-run.tar.gz -C /tmp uci-large/records uci-large/runs.jsonl",
    # the same for the six intermediate sets above the CPU's exact-GP N (stage --sets uci-intermediate):
    # gp-sod, svgp and xrfm, the rows the CPU lanes leave for last (the 2 cores' cost in uci-cost.md)
    "uci_intermediate_run": "mkdir -p /tmp/uci-inter/records && cp results/uci-splits/records/uci-{sml,parkinsons,"
                            "pumadyn32nm,pol,elevators,bike}__*.json /tmp/uci-inter/records/; "
                            "timeout -s TERM 480 python3 -m rfbench.cli run --datasets uci-sml,uci-parkinsons,"
                            "uci-pumadyn32nm,uci-pol,uci-elevators,uci-bike --protocol published --methods "
                            "gp-sod,svgp,xrfm --features 100,500 --device cuda --gpu-slots 6 --jobs 6 --threads 2 "
                            "--out /tmp/uci-inter --quiet --no-report; "
                            "tar czf $OUT/uci-inter-run.tar.gz -C /tmp uci-inter/records uci-inter/runs.jsonl",
    # issue 44 item 2: the GP rows, xRFM and SVGP of torgo-modern (nested 10 x 5 CV; every torgo set is
    # above the CPU's exact-GP N), resumed from the committed records; stage --sets torgo first
    "torgo_modern_run": "mkdir -p /tmp/torgo-modern/records && cp results/torgo-modern/records/*.json "
                        "/tmp/torgo-modern/records/; timeout -s TERM 480 python3 -m rfbench.cli run --suite torgo "
                        "--methods gp-sod,xrfm,svgp --features 100,500 --device cuda --gpu-slots 6 --jobs 6 "
                        "--threads 2 --out /tmp/torgo-modern --quiet --no-report; "
                        "tar czf $OUT/torgo-modern-run.tar.gz -C /tmp torgo-modern/records torgo-modern/runs.jsonl",
}


def _spec_datasets(name, reg):
    from rfbench.experiments.spec import load_spec

    return load_spec(name, reg).plan.datasets


def mirror_files(names, reg) -> list[str]:
    """The mirror-relative paths of the sets' files (data, appended, split masks)."""
    out = []
    for name in names:
        ds = reg.dataset(name)
        if ds.mirror is not None:
            out += [f for f, _ in ds.mirror.files]
        if ds.splits is not None:
            out.append(ds.splits.file)
    return out


def tracked_bytes() -> int:
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    return sum((REPO / f).stat().st_size for f in files.decode().split("\0") if f and (REPO / f).is_file())


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def exclude(*names: str) -> None:
    """Ignore the staging folders in this checkout only (.git/info/exclude), so they travel through carry."""
    path = Path(subprocess.run(["git", "-C", str(REPO), "rev-parse", "--git-path", "info/exclude"],
                               capture_output=True, text=True, check=True).stdout.strip())
    path = path if path.is_absolute() else REPO / path
    lines = path.read_text().splitlines() if path.is_file() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([*lines, *(f"/{n}/" for n in names if f"/{n}/" not in lines)]) + "\n")


def stage(names: list[str], mirror: Path, reg, max_file_mib: float, dest: Path = DATA) -> list[str]:
    """Make ``dest`` hold exactly the mirror files of the sets ``names`` (a set with a file over
    ``max_file_mib`` left out and named: the device scripts project a set they cannot load); the
    names of the sets staged."""
    kept, left_out = [], []
    no_mirror = [name for name in names if not mirror_files([name], reg)]    # generated or downloaded
    for name in [n for n in names if n not in no_mirror]:
        files = mirror_files([name], reg)
        for rel in files:
            if not (mirror / rel).is_file():
                raise SystemExit(f"gpu_kit: {mirror / rel} is not in the mirror; set RFBENCH_DATA_DIR to the "
                                 "mirror (../shared/datasets)")
        big = [rel for rel in files if (mirror / rel).stat().st_size > max_file_mib * 2**20]
        (left_out if big else kept).append((name, files))
    wanted = {dest / rel for _, files in kept for rel in files}
    for old in [p for p in dest.rglob("*") if p.is_file() and p not in wanted] if dest.is_dir() else []:
        old.unlink()
    copied = 0
    for dst in sorted(wanted):
        src = mirror / dst.relative_to(dest)
        if not dst.is_file() or dst.stat().st_size != src.stat().st_size:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
            copied += 1
    print(f"staged {len(kept)} sets in {dest} ({copied} files copied)"
          + (f"; left out (a file over {max_file_mib:g} MiB): {', '.join(n for n, _ in left_out)}" if left_out else "")
          + (f"; no mirror file (generated or downloaded): {', '.join(no_mirror)}" if no_mirror else ""))
    return [n for n, _ in kept]


def wheels() -> None:
    WHEELS.mkdir(exist_ok=True)
    platforms = [a for p in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                             "manylinux2014_x86_64", "manylinux1_x86_64", "any") for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(WHEELS), *MISSING],
                   check=True)
    print("wheels: " + ", ".join(sorted(p.name for p in WHEELS.glob("*.whl"))))


def check(names, reg) -> None:
    """Load fold 0 of every staged set from .device-data with the packages the image lacks blocked."""
    blocked = ["lightgbm", "xrfm", "openml", "arff", "scikit_posthocs", "dask", "distributed"]
    code = (f"import sys\nfor m in {blocked!r}: sys.modules[m] = None\n"
            "from rfbench import registry, protocol as proto\n"
            "from rfbench.execution.tasks import fold_task\n"
            "reg = registry.load()\n"
            f"for name in {names!r}:\n"
            "    p = proto.Protocol('published') if reg.dataset(name).splits else proto.Protocol()\n"
            "    t = fold_task(name, 'rff-gauss', 0, p, None, registry=reg)\n"
            "    print(name, t.X_tr.shape, t.source)\n")
    env = {**os.environ, "RFBENCH_DATA_DIR": str(DATA), "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="torgo,uci-large,gfc-tables", help=f"groups of sets: {', '.join(GROUPS)}")
    ap.add_argument("--max-file-mib", type=float, default=10.0, help="leave out a set with a larger file")
    ap.add_argument("--no-wheels", action="store_true")
    ap.add_argument("--check", action="store_true", help="load the staged sets as on the image, then stop")
    args = ap.parse_args(argv)
    groups = [g.strip() for g in args.sets.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise SystemExit(f"gpu_kit: unknown group {unknown[0]!r}; use {', '.join(GROUPS)}")
    from rfbench import registry

    reg = registry.load()
    if args.check:
        names = sorted({n for g in groups for n in GROUPS[g](reg)
                        if mirror_files([n], reg) and all((DATA / f).is_file() for f in mirror_files([n], reg))})
        check(names, reg)
        return 0
    mirror = os.environ.get("RFBENCH_DATA_DIR")
    if not mirror:
        raise SystemExit("gpu_kit: set RFBENCH_DATA_DIR to the dataset mirror (../shared/datasets)")
    exclude(DATA.name, WHEELS.name)
    stage(sorted({n for g in groups for n in GROUPS[g](reg)}), Path(mirror), reg, args.max_file_mib)
    if not args.no_wheels:
        wheels()
    total = tracked_bytes() + folder_bytes(DATA) + folder_bytes(WHEELS)
    print(f"travels: {total / 2**20:.1f} MiB of the device tool's {LIMIT_MIB} MiB "
          f"(tracked {tracked_bytes() / 2**20:.1f}, data {folder_bytes(DATA) / 2**20:.1f}, "
          f"wheels {folder_bytes(WHEELS) / 2**20:.1f})")
    if total > LIMIT_MIB * 2**20:
        print("over the limit: stage fewer sets (--sets)", file=sys.stderr)
        return 1
    prefix = ("python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "
              ".whl/*.whl && export PYTHONPATH=/tmp/site:$PWD RFBENCH_DATA_DIR=$PWD/.device-data "
              "PYTHONUNBUFFERED=1 || exit 1; nvidia-smi -L; ")
    print("\ncarry: [\".device-data\", \".whl\"]")
    for name, command in DEVICE_COMMANDS.items():
        print(f"run ({name}): {prefix}{command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
