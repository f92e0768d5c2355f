"""Summarise bench results.jsonl files of the issue-17 PCA scenarios as
markdown rows: variant, ε, median and quartiles of the centred
captured-variance ratio, median uncentred ratio, median clip, fit count.
A figure a record lacks (the uncentred ratio of a centring estimator, the
clip of an estimator without one) is shown as —."""
import collections
import json
import statistics as st
import sys

for f in sys.argv[1:]:
    cells = collections.defaultdict(list)
    for line in open(f):
        r = json.loads(line)
        m = r.get("metrics", {})
        if "captured_variance_ratio" in m:
            cells[(r["variant"], r["epsilon"])].append(m)
    def med(v, name, fmt):
        xs = [m[name] for m in v if name in m]
        return fmt % st.median(xs) if xs else "—"

    for key in sorted(cells):
        v = cells[key]
        c = [m["captured_variance_ratio"] for m in v]
        q = st.quantiles(c, n=4) if len(c) > 1 else [c[0]] * 3
        print("| %s | %g | %.3f | %.3f–%.3f | %s | %s | %d |" % (
            key[0], key[1], st.median(c), q[0], q[2],
            med(v, "captured_variance_ratio_uncentred", "%.3f"),
            med(v, "clip", "%.3g"), len(c)))
