package fedrepstudy

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
)

// FMNISTConfig is the real-data run: Fashion-MNIST split across users the
// personalized-FL way (each user holds two classes, labelled ±1), a public
// random projection of the 784 pixels, a private shared representation with
// local linear heads (fedrep-classify), beside the no-noise limit and a
// purely local baseline.
type FMNISTConfig struct {
	Dir                    string // directory holding train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz
	Users, PerUser         int
	Proj, Rank, Iterations int
	Step, Clip, InitClip   float64
	Holdout, Delta         float64
	Eps                    []float64
	Seeds                  int
	Progress               func(string)
}

// DefaultFMNISTConfig: 2400 users × 20 images (two classes each), JL to 64
// dimensions, rank 8, 10 rounds, a quarter of each user's images held out.
func DefaultFMNISTConfig() FMNISTConfig {
	return FMNISTConfig{Dir: "/usr/share/datasets/fashion-mnist", Users: 2400, PerUser: 20, Proj: 64, Rank: 8,
		Iterations: 10, Step: 1, Clip: 1, InitClip: 20, Holdout: 0.25, Delta: 1e-6, Eps: []float64{1, 2, 4, 8}, Seeds: 3}
}

// FMNISTRow is the median hold-out accuracy of one method at one ε (0 for
// the non-private rows).
type FMNISTRow struct {
	Method             string
	Epsilon            float64
	Accuracy, Min, Max float64
}

// FashionMNISTUsers builds the users data set: pixels/255 − 0.5, user u
// holds PerUser/2 images of each of two random distinct classes, y = +1 for
// the first class and −1 for the second.
func FashionMNISTUsers(dir string, users, perUser int, seed uint64) (*data.Dataset, error) {
	ds, err := dataio.Load(filepath.Join(dir, "train-images-idx3-ubyte.gz"), dataio.LoadOptions{Kind: data.Rows, Scale: 1.0 / 255,
		LabelsPath: filepath.Join(dir, "train-labels-idx1-ubyte.gz"), SkipHash: true})
	if err != nil {
		return nil, fmt.Errorf("loading Fashion-MNIST: %w", err)
	}
	if ds.Labels == nil {
		return nil, fmt.Errorf("fashion-MNIST: no labels")
	}
	byClass := map[int][]int{}
	for i, l := range ds.Labels {
		byClass[l] = append(byClass[l], i)
	}
	r := rand.New(rand.NewPCG(seed, 0xf3))
	for _, idx := range byClass {
		r.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
	}
	d := ds.P()
	half := perUser / 2
	x := mat.NewDense(users*2*half, d, nil)
	y := make([]float64, users*2*half)
	start := make([]int, users+1)
	ids := make([]int64, users)
	next := map[int]int{}
	row := 0
	for u := 0; u < users; u++ {
		start[u], ids[u] = row, int64(u)
		a := r.IntN(10)
		b := (a + 1 + r.IntN(9)) % 10
		// Interleave the two classes so that every split keeps both.
		for j := 0; j < 2*half; j++ {
			c, lab := a, 1.0
			if j%2 == 1 {
				c, lab = b, -1
			}
			pool := byClass[c]
			if next[c] >= len(pool) {
				return nil, fmt.Errorf("fashion-MNIST: class %d exhausted; use fewer users or images per user", c)
			}
			src := ds.X.RawRowView(pool[next[c]])
			next[c]++
			dst := x.RawRowView(row)
			for p := range dst {
				dst[p] = src[p] - 0.5
			}
			y[row] = lab
			row++
		}
	}
	start[users] = row
	out := &data.Dataset{Kind: data.Users, X: x, Y: y, UserStart: start, UserIDs: ids, Name: fmt.Sprintf("fashion-mnist users=%d per-user=%d", users, perUser)}
	return out, out.Validate()
}

// RunFMNISTStudy runs the real-data comparison.
func RunFMNISTStudy(ctx context.Context, cfg FMNISTConfig) ([]FMNISTRow, error) {
	type acc struct{ vals []float64 }
	res := map[string]map[float64]*acc{}
	var order []string
	add := func(m string, eps, v float64) {
		if res[m] == nil {
			res[m] = map[float64]*acc{}
			order = append(order, m)
		}
		if res[m][eps] == nil {
			res[m][eps] = &acc{}
		}
		res[m][eps].vals = append(res[m][eps].vals, v)
		if cfg.Progress != nil {
			cfg.Progress(fmt.Sprintf("%s ε=%g: accuracy %.4f", m, eps, v))
		}
	}
	for s := 1; s <= cfg.Seeds; s++ {
		ds, err := FashionMNISTUsers(cfg.Dir, cfg.Users, cfg.PerUser, uint64(s))
		if err != nil {
			return nil, err
		}
		base := map[string]string{"kprime": fmt.Sprint(cfg.Proj), "holdout": fmt.Sprint(cfg.Holdout), "output_v": "false", "local_fraction": "0.5", "head_data": "local"}
		raw := with(base, map[string]string{"rank": fmt.Sprint(cfg.Rank), "iterations": fmt.Sprint(cfg.Iterations),
			"step": fmt.Sprint(cfg.Step), "clip": fmt.Sprint(cfg.Clip), "init_clip": fmt.Sprint(cfg.InitClip)})
		run := func(grant privacy.Grant, params, over map[string]string) (float64, error) {
			return classifyAccuracy(ctx, ds, with(params, over), grant, uint64(100*s))
		}
		for _, eps := range cfg.Eps {
			a, err := run(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: cfg.Delta}, raw, nil)
			if err != nil {
				return nil, err
			}
			add("private shared representation (fedrep-classify), heads on S¹", eps, a)
			a, err = run(privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: cfg.Delta}, raw, map[string]string{"head_data": "all"})
			if err != nil {
				return nil, err
			}
			add("private shared representation (fedrep-classify), heads on S⁰ ∪ S¹", eps, a)
		}
		a, err := run(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e12}, raw, nil)
		if err != nil {
			return nil, err
		}
		add("ε → ∞ (same pipeline and clipping, no noise)", 0, a)
		// The purely local reference: fedrep-classify with rank k′, whose
		// k′×k′ orthonormal U spans the whole projected space, so the shared
		// representation constrains nothing and the heads are the users'
		// local ridge-logistic classifiers (the ridge is rotation invariant).
		local := with(base, map[string]string{"rank": fmt.Sprint(cfg.Proj), "iterations": "1", "init": "random"})
		if a, err = run(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e12}, local, nil); err != nil {
			return nil, fmt.Errorf("local baseline: %w", err)
		}
		add("local only, same local half S¹ as the heads (logistic on the projected pixels)", 0, a)
		if a, err = run(privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1e12}, local, map[string]string{"head_data": "all"}); err != nil {
			return nil, fmt.Errorf("local baseline: %w", err)
		}
		add("local only, all of the user's non-hold-out images (S⁰ ∪ S¹)", 0, a)
	}
	var out []FMNISTRow
	for _, m := range order {
		for _, eps := range append([]float64{0}, cfg.Eps...) {
			if a := res[m][eps]; a != nil {
				med, lo, hi := medianRange(a.vals)
				out = append(out, FMNISTRow{Method: m, Epsilon: eps, Accuracy: med, Min: lo, Max: hi})
			}
		}
	}
	return out, nil
}

// classifyAccuracy fits fedrep-classify with params under grant and
// returns its hold-out accuracy.
func classifyAccuracy(ctx context.Context, ds *data.Dataset, params map[string]string, grant privacy.Grant, seed uint64) (float64, error) {
	r, _, err := sdk.RunLocal(ctx, fedrep.Classify{}, ds, params, grant, sdk.LocalOptions{Seed: &seed})
	if err != nil {
		return 0, err
	}
	if l := scalarOf(r, "holdout_loss"); !math.IsNaN(l) {
		return 1 - l, nil
	}
	return 0, fmt.Errorf("no hold-out loss")
}

// with returns base overridden by over.
func with(base, over map[string]string) map[string]string {
	p := maps.Clone(base)
	maps.Copy(p, over)
	return p
}

// FMNISTMarkdown renders the rows.
func FMNISTMarkdown(rows []FMNISTRow) string {
	s := "| method | ε | hold-out accuracy (median [min–max]) |\n|---|---|---|\n"
	for _, r := range rows {
		eps := fmt.Sprint(r.Epsilon)
		if r.Epsilon == 0 {
			eps = "—"
		}
		s += fmt.Sprintf("| %s | %s | %.4f [%.4f–%.4f] |\n", r.Method, eps, r.Accuracy, r.Min, r.Max)
	}
	return s
}
