#!/bin/sh
# Cold and warm Fashion-MNIST fit time (issue 17 point 6) beside the plain
# NumPy script doing the same work, interleaved, ROUNDS rounds (default 5).
# Cold: the dplr cache of decoded copies is cleared first; warm: the same fit
# again. Every figure is the wall time of a whole process. Prints one line per
# round and the medians. Needs bin/dplr and the OpenBLAS plugins
# (make build BACKEND=openblas) and Debian's python3-numpy.
set -eu
rounds=${1:-5}
f=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
export DPLR_HOME=${DPLR_HOME:-/tmp/dplr-timing-home}
mkdir -p "$DPLR_HOME"
fit() {
	bin/dplr fit pca-analyze-gauss --data "$f" --scale 0.00392156862745098 --epsilon 1 --delta 1e-6 \
		--set rank=10 --set center=private --out "$DPLR_HOME/out" --json >"$DPLR_HOME/last.json" 2>/dev/null
}
now() { date +%s.%N; }
for i in $(seq "$rounds"); do
	bin/dplr cache clear --home "$DPLR_HOME" >/dev/null 2>&1 || rm -rf "$DPLR_HOME/cache"
	t0=$(now); fit; t1=$(now)
	fit; t2=$(now)
	/usr/bin/python3 bench/studies/pca/fmnist_numpy.py "$f" >/dev/null; t3=$(now)
	be=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["backend"])' "$DPLR_HOME/last.json")
	echo "$i $be $(echo "$t1 - $t0" | bc) $(echo "$t2 - $t1" | bc) $(echo "$t3 - $t2" | bc)"
done | /usr/bin/python3 -c '
import sys, statistics as st
rows = [l.split() for l in sys.stdin if l.strip()]
for r in rows: print("round %s backend %s: cold %.2f s, warm %.2f s, numpy %.2f s" % (r[0], r[1], float(r[2]), float(r[3]), float(r[4])))
c, w, n = (st.median(float(r[k]) for r in rows) for k in (2, 3, 4))
print("median: cold %.2f s (%.2f× numpy), warm %.2f s (%.2f× numpy), numpy %.2f s" % (c, c / n, w, w / n, n))
'
