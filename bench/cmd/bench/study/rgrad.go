// "bench study rgrad" runs the accuracy study of the rgrad estimators on
// synthetic trace-regression data (d1 = 30, d2 = 20, r = 2, Σ = diag(2, 1),
// σ_ξ = 0.5 by default) and prints markdown
// tables of median relative Frobenius errors against n and ε, or JSON with
// -json.
//
//	go run ./bench/cmd/bench study rgrad -seeds 10 -n 4000,8000,16000,32000 -eps 0.5,1,2,4,8,inf

package study

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	rgradstudy "github.com/dplr/dplr/bench/studies/rgrad"
)

// RGrad runs "bench study rgrad" with the arguments that follow it.
func RGrad(args []string) {
	fs := flag.NewFlagSet("bench study rgrad", flag.ExitOnError)
	c := rgradstudy.DefaultStudyConfig()
	ns := fs.String("n", "4000,8000,16000,32000", "comma-separated sample sizes")
	eps := fs.String("eps", "0.5,1,2,4,8,inf", "comma-separated total ε of the grant (inf: non-private)")
	fs.IntVar(&c.Seeds, "seeds", c.Seeds, "seeds per cell")
	fs.IntVar(&c.Iterations, "iterations", 0, "RGrad iterations T (0: ceil(ln n))")
	fs.IntVar(&c.D1, "d1", c.D1, "rows of M")
	fs.IntVar(&c.D2, "d2", c.D2, "columns of M")
	fs.IntVar(&c.Rank, "rank", c.Rank, "rank of M")
	fs.Float64Var(&c.Sigma1, "sigma1", c.Sigma1, "largest singular value of M")
	fs.Float64Var(&c.SigmaR, "sigmar", c.SigmaR, "smallest singular value of M")
	fs.Float64Var(&c.SigmaXi, "sigma-xi", c.SigmaXi, "response noise standard deviation")
	fs.Float64Var(&c.Delta, "delta", c.Delta, "δ of the grant")
	set := fs.String("set", "", "comma-separated key=value parameters of the model-calibrated variants (rgrad-dp, rgrad-weak), e.g. c3=0.5")
	only := fs.String("only", "", "comma-separated estimator names or beginnings of variant labels to run (default: all variants)")
	asJSON := fs.Bool("json", false, "print JSON instead of markdown")
	_ = fs.Parse(args)

	nList := must(parseList(*ns, "sample size", strconv.Atoi, func(v int) bool { return v >= 2 }))
	eList := must(parseList(*eps, "ε", parseFloat, func(v float64) bool { return v > 0 }))
	if *set != "" {
		c.ModelParams = map[string]string{}
		for _, kv := range strings.Split(*set, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				check("rgrad", fmt.Errorf("bad -set entry %q: want key=value", kv))
			}
			c.ModelParams[k] = v
		}
	}
	vars := rgradstudy.DefaultVariants(c)
	if *only != "" {
		keep := must(parseList(*only, "variant", func(s string) (string, error) { return s, nil }, anyValue[string]))
		vars = slices.DeleteFunc(vars, func(v rgradstudy.Variant) bool {
			return !slices.ContainsFunc(keep, func(k string) bool { return k == v.Estimator || strings.HasPrefix(v.Label, k) })
		})
	}
	cells, err := rgradstudy.RunStudy(context.Background(), c, nList, eList, vars, func(s string) { fmt.Fprintln(os.Stderr, s) })
	check("rgrad", err)
	if *asJSON {
		type row struct {
			Variant    string    `json:"variant"`
			N          int       `json:"n"`
			Epsilon    string    `json:"epsilon"`
			Median     float64   `json:"median_rel_error"`
			InitMedian float64   `json:"median_init_rel_error"`
			Rate       float64   `json:"rate_curve"`
			Rel        []float64 `json:"rel_errors"`
		}
		out := make([]row, 0, len(cells))
		for _, cl := range cells {
			out = append(out, row{cl.Variant, cl.N, strconv.FormatFloat(cl.Epsilon, 'g', -1, 64), cl.Median(), cl.InitMedian(), rgradstudy.RateCurve(c, cl.N, cl.Epsilon), cl.Rel})
		}
		writeJSON("rgrad", "-", out)
		return
	}
	fmt.Printf("Configuration: d1=%d, d2=%d, r=%d, Σ=diag(%g…%g), σ_ξ=%g, grant (ε, δ=%g) for the whole run, T=%s, %d seeds\n",
		c.D1, c.D2, c.Rank, c.Sigma1, c.SigmaR, c.SigmaXi, c.Delta, iterLabel(c.Iterations), c.Seeds)
	fmt.Print(rgradstudy.StudyMarkdown(c, cells, nList, eList))
}

func iterLabel(t int) string {
	if t == 0 {
		return "ceil(ln n)"
	}
	return strconv.Itoa(t)
}
