#!/bin/bash
# Interleaved rounds: the local cold fit, --engine beam on the one file and on 8 shards.
# usage: beam-split.sh TAG ROUNDS (bin/dplr, bin/plugins and bin/dplr-beam built; data by beam-split-gen.py)
B=/dev/shm/beamsplit
BIN=${BIN:-$(cd "$(dirname "$0")/../.." && pwd)/bin}
for r in $(seq 1 "$2"); do
  for mode in local one shards; do
    tag=$1-$r; home=$B/home-$mode-$tag; out=$B/out-$mode-$tag
    rm -rf "$home" "$out"
    case $mode in
    local)  args=(--data $B/one/x.npy) ;;
    one)    args=(--data "$B/one/*.npy" --engine beam --runner prism) ;;
    shards) args=(--data "$B/shards/*.npy" --engine beam --runner prism) ;;
    esac
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %M %U %S" -o "$B/time-$mode-$tag" "$BIN/dplr" fit pca-analyze-gauss "${args[@]}" --home "$home" --out "$out" \
      --epsilon 1 --delta 1e-9 --set rank=5 --set clip=1 --set center=none --seed 3 >"$B/log-$mode-$tag" 2>&1
    echo "$mode $tag rc=$? load=$load wall_s,maxrss_kb,user_s,sys_s: $(tail -1 "$B/time-$mode-$tag")"
    rm -rf "$home"
  done
done
