#!/bin/sh
# Heavy-tailed synthetic study (issue 17): Analyze Gauss, rank 2,
# center=private, ε = 1, δ = 1e-6, clip=auto against fixed clips, 10
# fresh-noise fits each through the host; prints clip, median and quartiles
# of ‖sin Θ(U, truth)‖₂. Usage: bench/studies/pca/heavytail.sh [REPS]
set -eu
reps=${1:-10}
dir=${HEAVY_DIR:-/tmp/dplr-heavytail}
rm -rf "$dir"
bin/dplr gen spiked --out "$dir" --set n=20000 --set p=50 --set rank=2 --set lambda=20,10 --seed 3 >/dev/null
# Heavy tails: 0.5 % of the rows, chosen at random, multiplied by 10^u
# (u uniform on [2, 4]), then every row shifted by a common mean of norm 10
# in a random direction. Independent row scales and a common shift keep the
# covariance's eigenvectors, so the truth U stays the subspace to recover;
# the norms become heavy-tailed and the mean matters, which is what makes a
# fixed clip chosen without looking at the data fail.
/usr/bin/python3 - "$dir/X.npy" <<'PY'
import sys
import numpy as np
path = sys.argv[1]
x = np.load(path).astype(np.float64)
rng = np.random.default_rng(1)
mu = rng.standard_normal(x.shape[1])
mu *= 10 / np.linalg.norm(mu)
hit = rng.random(x.shape[0]) < 0.005
x[hit] *= 10 ** (2 + 2 * rng.random((hit.sum(), 1)))
np.save(path, x + mu)
print(f"heavy tail: {hit.sum()} of {x.shape[0]} rows of {path} scaled by 10^U(2,4), all shifted by a mean of norm 10")
PY
for c in auto 1 3 10 30 100 1000 10000; do
	for i in $(seq "$reps"); do
		bin/dplr fit pca-analyze-gauss --data "$dir" --epsilon 1 --delta 1e-6 --set rank=2 --set center=private --set clip=$c --json 2>/dev/null
	done | /usr/bin/python3 -c '
import json, sys, statistics as st
dec = json.JSONDecoder(); s = sys.stdin.read(); i = 0; sins = []; clips = []
while i < len(s):
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    r, i = dec.raw_decode(s, i)
    m = {x["name"]: x["value"] for x in r["metrics"]}
    sc = {x["name"]: x["value"] for x in r["outputs"]["scalars"]}
    sins.append(m["U.sin_theta_spectral"]); clips.append(sc["clip"])
q = st.quantiles(sins, n=4)
print("| %s | %.3g | %.3f | %.3f–%.3f | %d |" % (sys.argv[1], st.median(clips), st.median(sins), q[0], q[2], len(sins)))
' "$c"
done
