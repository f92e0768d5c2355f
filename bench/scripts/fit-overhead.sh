#!/usr/bin/env bash
# fit-overhead.sh NEW_BIN_DIR OLD_BIN_DIR [ROUNDS]
# End-to-end time of one small `dplr fit example-mean` (2000×10 spiked rows,
# fresh empty ledgers), two builds interleaved round by round so that
# machine load hits both alike. Prints one "build milliseconds" line per
# fit and the medians; also keeps each build's last result.json timings.
# FIT replaces the estimator and its settings, e.g.
# FIT="pca-analyze-gauss --set rank=2" (the README fit's plan on the small
# rows: its privacy accounting is most of its cost).
set -euo pipefail
new=${1:?new bin dir}; old=${2:?old bin dir}; rounds=${3:-15}
read -r -a fit <<< "${FIT:-example-mean --set clip=3}"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$new/dplr" gen spiked --out "$work/d" --set n=2000 --set p=10 --seed 3 >/dev/null 2>&1
for i in $(seq 1 "$rounds"); do
  for v in new old; do
    b=$new; [ "$v" = old ] && b=$old
    t0=$(date +%s%N)
    DPLR_HOME="$work/home-$v" "$b/dplr" fit "${fit[@]}" --data "$work/d/X.npy" --epsilon 1 --delta 1e-6 \
      --out "$work/out-$v" --quiet --plugin-dir "$b/plugins" >/dev/null
    t1=$(date +%s%N)
    echo "$v $(( (t1 - t0) / 1000 ))"
  done
done | tee "$work/times"
python3 - "$work" <<'PY'
import json, statistics, sys
w = sys.argv[1]
d = {}
for line in open(w + "/times"):
    v, t = line.split(); d.setdefault(v, []).append(int(t) / 1000)
for v, ts in d.items():
    r = json.load(open(f"{w}/out-{v}/result.json"))["timings"]
    phases = {k: round(x * 1000, 1) for k, x in r.items() if k.endswith("_s")}
    print(f"{v}: median {statistics.median(ts):.1f} ms, min {min(ts):.1f} ms over {len(ts)}; last run's phases (ms): {phases}")
PY
