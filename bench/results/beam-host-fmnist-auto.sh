#!/bin/bash
# Interleaved rounds: the headline fit with its defaults (clip=auto, center=private) through
# `dplr fit --engine beam` (aggregation passes, each a prism pipeline over 6 .npy shards of the
# images already scaled by 1/255) vs the single-machine fit on the IDX file with --scale 1/255.
# Run in a directory holding shards/part-K.npy.
B=${DPLR:-$(cd "$(dirname "$0")/../.." && pwd)/bin/dplr}
S=0.00392156862745098
for r in 1 2 3; do
  for v in beam file; do
    if [ $v = beam ]; then D=(--data 'shards/*.npy' --engine beam); else D=(--data /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz --scale $S); fi
    L=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %M" -o t.$v.$r nice $B fit pca-analyze-gauss "${D[@]}" --home home-$v-$r --epsilon 1 --delta 1e-6 --set rank=10 --set center=private --seed 7 --out out-$v-$r --quiet >/dev/null 2>err.$v.$r
    echo "$v round $r: $(cat t.$v.$r) load $L"
  done
done
