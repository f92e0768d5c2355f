package suite

import (
	"math"
	"sort"
	"strconv"
)

// theory is a rate curve up to a constant: f(x) where x is ε or the swept
// parameter (xName), the other data parameters and ε given.
type theory func(x float64, xName string, params map[string]string, eps float64) float64

func param(p map[string]string, k string, def float64) float64 {
	if v, err := strconv.ParseFloat(p[k], 64); err == nil {
		return v
	}
	return def
}

// theories are the named rate curves scenarios can draw. Each is the
// rate's shape; the report fits its constant.
var theories = map[string]theory{
	// 1/ε: the privacy-dominated regime of every estimator here.
	"inv-eps": func(x float64, _ string, _ map[string]string, _ float64) float64 { return 1 / x },
	// 1/n at fixed ε.
	"inv-n": func(x float64, _ string, _ map[string]string, _ float64) float64 { return 1 / x },
	// Trace regression (Zha): σ_ξ·sqrt(r(d1+d2)/n) + (σ_ξ+σ_r)·r(d1+d2)/(nε),
	// with x either ε or n.
	"rgrad": func(x float64, xName string, p map[string]string, eps float64) float64 {
		n, e := param(p, "n", 16000), eps
		if xName == "n" {
			n = x
		} else {
			e = x
		}
		r, d1, d2 := param(p, "rank", 2), param(p, "d1", 30), param(p, "d2", 20)
		sx, sr := param(p, "sigma_xi", 0.5), param(p, "sigmar", 1)
		return sx*math.Sqrt(r*(d1+d2)/n) + (sx+sr)*r*(d1+d2)/(n*e)
	},
}

func theoryNames() []string {
	var out []string
	for k := range theories {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
