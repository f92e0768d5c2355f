#!/usr/bin/env bash
# fmnist-vs-numpy.sh [ROUNDS] [OLD_BIN_DIR]
#
# Cold and warm `dplr fit pca-analyze-gauss` on the Fashion-MNIST training
# images (gzip IDX, rank 10, clip=auto, center=private, OpenBLAS plugins)
# beside the plain NumPy script doing the same work
# (bench/studies/pca/fmnist_numpy.py: read and decompress, scale, private-
# style clip and mean, XᵀX, symmetric noise, eigendecomposition), interleaved
# round by round so machine load hits every variant alike. Cold: the dplr
# cache of the home is cleared first; warm: the same fit again. Every figure
# is the wall time of a whole process. With OLD_BIN_DIR (a second build's
# bin/ directory, e.g. of main) its cold and warm fits run in the same
# rounds, in their own home, and the two builds take turns going first: the
# first cold fit after NumPy's run is about 0.15 s slower, whichever build
# it is.
#
# Prints one line per round: the load average, then per variant
# "wall,cpu,prepare,plugin_fit" (seconds: the process's wall time, the CPU
# time of dplr and its plugin process, and the host preparation and plugin
# fit phases from result.json) and numpy "wall,cpu"; then medians and
# ratios to NumPy. On a loaded machine the CPU-time ratio is the steadier
# of the two: wall time there measures the share of the cores a process
# got.
# Needs bin/dplr and bin/plugins-openblas (make build BACKEND=openblas) and
# /usr/bin/python3 with numpy. Run it with nice on a shared machine.
set -euo pipefail
rounds=${1:-5}
old=${2:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
new="$here/bin"
f=${FMNIST:-/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz}
npy_script="$here/bench/studies/pca/fmnist_numpy.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fit BIN HOME TAG: one fit; prints wall seconds, CPU seconds (user + sys
# of dplr and its plugin process), prepare_s and plugin_fit_s.
fit() {
	local bin=$1 home=$2 tag=$3
	DPLR_HOME="$home" /usr/bin/time -f "%e %U %S" -o "$work/time-$tag" "$bin/dplr" fit pca-analyze-gauss \
		--data "$f" --scale 0.00392156862745098 --epsilon 1 --delta 1e-6 --set rank=10 --set center=private \
		--plugin-dir "$bin/plugins-openblas" --out "$work/out-$tag" --quiet >/dev/null 2>"$work/err-$tag" ||
		{ cat "$work/err-$tag" >&2; exit 1; }
	/usr/bin/python3 - "$work/out-$tag/result.json" "$work/time-$tag" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["timings"]
assert r["backend"] == "openblas", r["backend"]
wall, user, sys_ = (float(v) for v in open(sys.argv[2]).read().split()[-3:])
print("%.2f %.2f %.3f %.3f" % (wall, user + sys_, t.get("prepare_s", 0), t.get("plugin_fit_s", 0)))
PY
}

numpy() {
	/usr/bin/time -f "%e %U %S" -o "$work/time-numpy" /usr/bin/python3 "$npy_script" "$f" >/dev/null
	awk '{printf "%.2f %.2f\n", $1, $2 + $3}' "$work/time-numpy"
}

variants=(new)
[ -n "$old" ] && variants+=(old)
for i in $(seq "$rounds"); do
	line="round $i load $(cut -d' ' -f1 /proc/loadavg)"
	order=("${variants[@]}")
	[ -n "$old" ] && [ $((i % 2)) = 0 ] && order=(old new)
	for v in "${order[@]}"; do
		bin=$new
		[ "$v" = old ] && bin=$old
		home="$work/home-$v"
		mkdir -p "$home"
		"$bin/dplr" cache clear --home "$home" >/dev/null
		line="$line $v-cold $(fit "$bin" "$home" "$v-cold" | tr ' ' ,)"
		line="$line $v-warm $(fit "$bin" "$home" "$v-warm" | tr ' ' ,)"
	done
	line="$line numpy $(numpy | tr ' ' ,)"
	echo "$line"
done | tee "$work/rounds"
/usr/bin/python3 - "$work/rounds" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
cols = {}
for r in rows:
    for k in range(4, len(r), 2):
        cols.setdefault(r[k], []).append([float(x) for x in r[k + 1].split(",")])
med = lambda v, j=0: st.median(x[j] for x in v)
npy, npy_cpu = med(cols["numpy"]), med(cols["numpy"], 1)
print("load average during the rounds: %s" % " ".join(r[3] for r in rows))
print("median numpy    %.2f s wall, %.2f s CPU" % (npy, npy_cpu))
for name, v in cols.items():
    if name == "numpy":
        continue
    ratios = [x[0] / n[0] for x, n in zip(v, cols["numpy"])]
    print("median %-9s %.2f s wall = %.2f× numpy (per round %s), %.2f s CPU = %.2f× numpy; prepare %.2f s, plugin fit %.2f s" % (
        name, med(v), med(v) / npy, " ".join("%.2f" % r for r in ratios), med(v, 1), med(v, 1) / npy_cpu, med(v, 2), med(v, 3)))
PY
