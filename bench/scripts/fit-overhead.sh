#!/usr/bin/env bash
# fit-overhead.sh NEW_BIN_DIR OLD_BIN_DIR [ROUNDS]
# End-to-end time of one small `dplr fit example-mean` (2000×10 spiked rows,
# fresh empty ledgers), two builds interleaved round by round so that
# machine load hits both alike, and /bin/true in the same rounds: the
# harness's own floor (starting and reaping a process from Python, about
# 1 ms), which every figure includes. Each process is timed from Python
# (time.perf_counter around subprocess.run), not with `date` around it:
# two `date` processes add about 1.7 ms of their own. Prints one line per
# round, then the medians and the load average; also keeps each build's
# last result.json timings.
# FIT replaces the estimator and its settings, e.g.
# FIT="pca-analyze-gauss --set rank=2" (the README fit's plan on the small
# rows: its privacy accounting is most of its cost).
set -euo pipefail
new=${1:?new bin dir}; old=${2:?old bin dir}; rounds=${3:-15}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$new/dplr" gen spiked --out "$work/d" --set n=2000 --set p=10 --seed 3 >/dev/null 2>&1
/usr/bin/python3 - "$new" "$old" "$rounds" "$work" "${FIT:-example-mean --set clip=3}" <<'PY'
import json, os, statistics, subprocess, sys, time
new, old, rounds, work, fit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5].split()
def cmd(b, v):
    return [b + "/dplr", "fit", *fit, "--data", work + "/d/X.npy", "--epsilon", "1", "--delta", "1e-6",
            "--out", f"{work}/out-{v}", "--quiet", "--plugin-dir", b + "/plugins"]
runs = {"new": cmd(new, "new"), "old": cmd(old, "old"), "true": ["/bin/true"]}
times, loads = {v: [] for v in runs}, []
for i in range(rounds):
    loads.append(open("/proc/loadavg").read().split()[0])
    order = list(runs) if i % 2 == 0 else ["old", "new", "true"]
    line = []
    for v in order:
        env = dict(os.environ, DPLR_HOME=f"{work}/home-{v}")
        t = time.perf_counter()
        with open(f"{work}/stderr-{v}", "w") as err:
            subprocess.run(runs[v], env=env, stdout=subprocess.DEVNULL, stderr=err, check=True)
        ms = (time.perf_counter() - t) * 1e3
        times[v].append(ms)
        line.append(f"{v} {ms:.1f}")
    print(f"round {i + 1} load {loads[-1]} " + " ".join(line), flush=True)
print("load average during the rounds: " + " ".join(loads))
for v, ts in times.items():
    phases = ""
    if v != "true":
        r = json.load(open(f"{work}/out-{v}/result.json"))["timings"]
        phases = "; last run's phases (ms): " + str({k: round(x * 1000, 1) for k, x in r.items() if k.endswith("_s")})
    print(f"{v}: median {statistics.median(ts):.1f} ms, min {min(ts):.1f} ms over {len(ts)}{phases}")
PY
