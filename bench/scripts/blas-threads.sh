#!/bin/bash
# BLAS threads under contention (bench/results/blas-threads.md). Run from a
# directory holding an OpenBLAS build: ./dplr (make build) and plugins/
# (go build -tags openblas -o plugins/ ./plugins/fedrep/cmd/dplr-fedrep), and
# the data: ./dplr gen users-lowrank --out u20k --set samples=10 --set dim=50
# --set rank=2 --set noise=0.01 --set users=20000.
# interleaved: fedrep-private and fedrep-privaltmin, default threads (1) vs OPENBLAS_NUM_THREADS=2
export DPLR_HOME=${DPLR_HOME:-$PWD/home}
for r in 1 2 3 4 5; do
  for est in fedrep-private fedrep-privaltmin; do
    for th in default 2; do
      if [ $th = default ]; then unset OPENBLAS_NUM_THREADS; else export OPENBLAS_NUM_THREADS=2; fi
      s=$(date +%s.%N)
      ./dplr fit $est --data u20k --plugin-dir "$PWD/plugins" --epsilon 1 --delta 1e-6 --set rank=2 --set output_v=false --out o-$est-$th-$r --quiet --timeout 120s >/dev/null 2>err-$est-$th-$r || echo "fail $est $th $r $(tail -1 err-$est-$th-$r)"
      e=$(date +%s.%N)
      echo "$r $est $th $(echo "$e - $s" | bc) load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
