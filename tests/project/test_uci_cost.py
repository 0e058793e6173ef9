"""bench/perf/uci_cost.py's GPU section (issue 44 item 3), read off uci_gpu.py's rows: FALKON at
M = 10 000 against the best GP row of its set, and each device fit against its CPU twin."""

from tests.bench_scripts import bench_script


def row(role, method, device, rmse=None, seconds=None, peak=1.0, status="done", dataset="uci-kin40k", message=""):
    return {"role": role, "method": method, "device": device, "rmse": rmse, "seconds": seconds, "peak_gb": peak,
            "status": status, "dataset": dataset, "message": message}


def test_falkon_against_the_lowest_rmse_gp_row_and_each_device_fit_against_its_cpu_twin():
    cost = bench_script("uci_cost")
    rows = [row("falkon M=10000", "falkon", "cuda", 0.10, 20.0, peak=9.0),
            row("gp N=10000", "gp-sod", "cuda", 0.11, 12.0),
            row("gp-sod N=3500", "gp-sod", "cpu", 0.18, 84.0),
            row("gp-sod N=3500", "gp-sod", "cuda", 0.18 * (1 + 2e-14), 1.2),
            row("falkon M=500", "falkon", "cpu", 0.33, 20.0),
            row("falkon M=500", "falkon", "cuda", status="error", message="CUDA out of memory")]
    text = "\n".join(cost.gpu_summary_lines(rows))
    # the best GP row is the 10 000-row one (RMSE 0.11, not 0.18): ratio 0.10 / 0.11, time 12 / 20
    assert "| kin40k | 0.1000 | gp N=10000 (cuda) | 0.1100 | 0.909 | 20.0 | 12.0 | 0.60 | 9.00 |" in text
    assert "| gp-sod N=3500 | kin40k | 84.0 | 1.20 | 70× | 0.180000 | 0.180000 | 2.0e-14 |" in text
    # a device fit that failed is its error, beside its twin's seconds
    assert "| falkon M=500 | kin40k | 20.0 | error: CUDA out of memory |" in text
