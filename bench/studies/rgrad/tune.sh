#!/bin/sh
# The rgrad study of issue 28 item 4 (bench/results/rgrad.md, "No oracle
# inputs"): a 50×50 rank-3 matrix-sensing task, Σ = diag(3, 2, 1), σ_ξ = 0.5,
# n = 40000, grant (ε = 1, δ = 1e-5), 5 data and noise seeds per cell. Each
# estimator given the true parameters (or the clips derived from them) beside
# the same estimator given only the rank and the budget, then rgrad-dp at
# T = 3, 5 and 2× the default T = ceil(ln n) = 11. Writes JSON to OUT
# (default bench/out/rgrad-tune).
set -e
out=${OUT:-bench/out/rgrad-tune}
mkdir -p "$out"
go build -o "$out/bench" ./bench/cmd/bench
task="-seeds 5 -n 40000 -eps 1 -d1 50 -d2 50 -rank 3 -sigma1 3 -sigmar 1 -sigma-xi 0.5 -json"
"$out/bench" study rgrad $task -only "rgrad-dp (explicit,rgrad-dp (rank,rgrad-strict (clipped,rgrad-strict (rank" > "$out/default.json"
for T in 3 5 22; do
	"$out/bench" study rgrad $task -iterations $T -only "rgrad-dp (explicit,rgrad-dp (rank" > "$out/T$T.json"
done
