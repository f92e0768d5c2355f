#!/bin/bash
# Interleaved rounds: --engine beam on 6 shards vs the single-machine fit on the IDX file.
B=${DPLR:-$(cd "$(dirname "$0")/../.." && pwd)/bin/dplr}
for r in 1 2 3; do
  for v in beam file; do
    if [ $v = beam ]; then D=(--data 'shards/*.npy' --engine beam); else D=(--data /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz); fi
    L=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %M" -o t.$v.$r nice $B fit pca-analyze-gauss "${D[@]}" --home home --epsilon 1 --delta 1e-6 --set rank=10 --set clip=2550 --seed 7 --out out-$v-$r --quiet >/dev/null 2>err.$v.$r
    echo "$v round $r: $(cat t.$v.$r) load $L"
  done
done
