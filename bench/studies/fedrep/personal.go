package fedrepstudy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
)

// PersonalTask is a personalized image task (issue 18): every user holds
// its own binary problem (a set of classes labelled +1 against a disjoint
// set labelled −1), Train rows it trains on and Holdout rows it is scored
// on, features the image's pixels in [0, 1] plus a constant 1: Fashion-MNIST
// pooled 2×2 (d = 197), or scikit-learn's 8×8 digits (Digits, d = 65).
type PersonalTask struct {
	Dir            string // Fashion-MNIST: directory of the Debian dataset-fashion-mnist files; digits: scikit-learn's digits.csv.gz
	Users          int    // number of users n
	Train, Holdout int    // rows per user: training rows, held-out rows
	ClassesPerSide int    // classes labelled +1 (and as many labelled −1)
	// Digits reads Dir as scikit-learn's digits. Its 1797 images are too
	// few for one image per row, so every class's images are split once
	// (seeded) into halves: training rows are drawn with replacement from
	// the first half, held-out rows from the second (users share images,
	// a test image never trains).
	Digits bool
}

// DefaultPersonalTask is the task of issue 18: 5000 users, each with its own
// pair of classes, 6 training and 4 held-out rows per user.
func DefaultPersonalTask() PersonalTask {
	return PersonalTask{Dir: "/usr/share/datasets/fashion-mnist", Users: 5000, Train: 6, Holdout: 4, ClassesPerSide: 1}
}

// rowsPerUser is the number of rows every user holds.
func (t PersonalTask) rowsPerUser() int { return t.Train + t.Holdout }

// holdoutFraction is the plugin's holdout parameter that holds out exactly
// the last Holdout rows of every user.
func (t PersonalTask) holdoutFraction() float64 {
	// floor(h·m) must equal Holdout: aim at the middle of the interval.
	return (float64(t.Holdout) + 0.5) / float64(t.rowsPerUser())
}

// imagePool caches the images per source (loading and pooling the 70000
// Fashion-MNIST images takes a few seconds).
var imagePool = map[string]*pooled{}

// pooled is an image set: rows of pixels in [0, 1] and their class labels.
type pooled struct {
	x      [][]float64
	labels []int
}

// load reads the task's images: Fashion-MNIST's training and test images
// pooled 2×2, or the digits' 8×8 images (pixels/16).
func (t PersonalTask) load() (*pooled, error) {
	if p := imagePool[t.Dir]; p != nil {
		return p, nil
	}
	p := &pooled{}
	if t.Digits {
		ds, err := dataio.Load(t.Dir, dataio.LoadOptions{Kind: data.Rows, SkipHash: true})
		if err != nil {
			return nil, fmt.Errorf("loading digits: %w", err)
		}
		if ds.P() != 65 {
			return nil, fmt.Errorf("digits: want 64 pixels and a label, got %d columns", ds.P())
		}
		for i := 0; i < ds.N(); i++ {
			src := ds.X.RawRowView(i)
			row := make([]float64, 64)
			for j := range row {
				row[j] = src[j] / 16
			}
			p.x = append(p.x, row)
			p.labels = append(p.labels, int(src[64]))
		}
		imagePool[t.Dir] = p
		return p, nil
	}
	for _, part := range []string{"train", "t10k"} {
		ds, err := dataio.Load(filepath.Join(t.Dir, part+"-images-idx3-ubyte.gz"), dataio.LoadOptions{Kind: data.Rows, Scale: 1.0 / 255,
			LabelsPath: filepath.Join(t.Dir, part+"-labels-idx1-ubyte.gz"), SkipHash: true})
		if err != nil {
			return nil, fmt.Errorf("loading Fashion-MNIST %s: %w", part, err)
		}
		if ds.Labels == nil || ds.P() != 784 {
			return nil, fmt.Errorf("fashion-MNIST %s: want 784 pixels with labels", part)
		}
		for i := 0; i < ds.N(); i++ {
			src := ds.X.RawRowView(i)
			row := make([]float64, 196)
			for a := 0; a < 14; a++ {
				for b := 0; b < 14; b++ {
					row[a*14+b] = (src[(2*a)*28+2*b] + src[(2*a)*28+2*b+1] + src[(2*a+1)*28+2*b] + src[(2*a+1)*28+2*b+1]) / 4
				}
			}
			p.x = append(p.x, row)
			p.labels = append(p.labels, ds.Labels[i])
		}
	}
	imagePool[t.Dir] = p
	return p, nil
}

// Build draws the users data set of the task (seed: the users' classes and
// images). Within a user the rows alternate between the +1 and the −1 side,
// so that the training rows and the held-out rows are both balanced; the
// held-out rows are the last Holdout rows.
func (t PersonalTask) Build(seed uint64) (*data.Dataset, error) {
	p, err := t.load()
	if err != nil {
		return nil, err
	}
	if t.ClassesPerSide < 1 || 2*t.ClassesPerSide > 10 {
		return nil, fmt.Errorf("classes per side %d: need 1…5", t.ClassesPerSide)
	}
	byClass := map[int][]int{}
	for i, l := range p.labels {
		byClass[l] = append(byClass[l], i)
	}
	r := rand.New(rand.NewPCG(seed, 0x18))
	for c := 0; c < 10; c++ {
		idx := byClass[c]
		r.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
	}
	// image returns the next image of class c for row j of a user.
	next := map[int]int{}
	image := func(c, j int) ([]float64, error) {
		pool := byClass[c]
		if t.Digits {
			half := len(pool) / 2
			if j < t.Train {
				return p.x[pool[r.IntN(half)]], nil
			}
			return p.x[pool[half+r.IntN(len(pool)-half)]], nil
		}
		if next[c] >= len(pool) {
			return nil, fmt.Errorf("class %d exhausted; use fewer users or rows per user", c)
		}
		next[c]++
		return p.x[pool[next[c]-1]], nil
	}
	m := t.rowsPerUser()
	d := len(p.x[0]) + 1
	x := mat.NewDense(t.Users*m, d, nil)
	y := make([]float64, t.Users*m)
	start := make([]int, t.Users+1)
	ids := make([]int64, t.Users)
	row := 0
	for u := 0; u < t.Users; u++ {
		start[u], ids[u] = row, int64(u)
		perm := r.Perm(10)
		pos, neg := perm[:t.ClassesPerSide], perm[t.ClassesPerSide:2*t.ClassesPerSide]
		first := 1.0
		if r.IntN(2) == 1 {
			first = -1
		}
		for j := 0; j < m; j++ {
			lab := first
			if j%2 == 1 {
				lab = -first
			}
			side := pos
			if lab < 0 {
				side = neg
			}
			src, err := image(side[r.IntN(len(side))], j)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Base(t.Dir), err)
			}
			dst := x.RawRowView(row)
			copy(dst, src)
			dst[d-1] = 1
			y[row] = lab
			row++
		}
	}
	start[t.Users] = row
	name := "fashion-mnist"
	if t.Digits {
		name = "digits"
	}
	ds := &data.Dataset{Kind: data.Users, X: x, Y: y, UserStart: start, UserIDs: ids,
		Name: fmt.Sprintf("%s personal users=%d train=%d holdout=%d classes=%d", name, t.Users, t.Train, t.Holdout, t.ClassesPerSide)}
	return ds, ds.Validate()
}

// heldOut returns the held-out rows of user u (the last Holdout rows).
func (t PersonalTask) heldOut(ds *data.Dataset, u int) (*mat.Dense, []float64) {
	e := ds.UserStart[u+1]
	s := e - t.Holdout
	return ds.X.Slice(s, e, 0, ds.P()).(*mat.Dense), ds.Y[s:e]
}

// Accuracy scores a released U and the per-user heads V on every user's
// held-out rows through fedrep.Predict (sign of ⟨x, U v_user⟩, each user
// reading only its own head) and returns the mean over users of the
// per-user accuracy.
func (t PersonalTask) Accuracy(ds *data.Dataset, u, v, ids *mat.Dense) (float64, error) {
	var tot float64
	for i := 0; i < ds.NumUsers(); i++ {
		head, err := fedrep.HeadOf(v, ids, ds.UserIDs[i])
		if err != nil {
			return 0, err
		}
		acc, err := t.accuracy(ds, i, u, head)
		if err != nil {
			return 0, err
		}
		tot += acc
	}
	return tot / float64(ds.NumUsers()), nil
}

// accuracy is the share of user i's held-out rows whose label the
// representation u and the head classify right.
func (t PersonalTask) accuracy(ds *data.Dataset, i int, u *mat.Dense, head []float64) (float64, error) {
	xs, ys := t.heldOut(ds, i)
	pred, err := fedrep.Predict(u, head, xs, true)
	if err != nil {
		return 0, err
	}
	var ok float64
	for j, p := range pred {
		if p == signOf(ys[j]) {
			ok++
		}
	}
	return ok / float64(len(ys)), nil
}

// signOf is +1 for y > 0 and −1 elsewhere (the labels' rule).
func signOf(y float64) float64 {
	if y > 0 {
		return 1
	}
	return -1
}

// LocalRidgeAccuracy is the "each user alone" reference: user i fits
// w = argmin ‖X w − y‖² + λ‖w‖² on its Train rows (solved in the dual,
// w = Xᵀ(X Xᵀ + λI)⁻¹ y) and is scored on its held-out rows.
func (t PersonalTask) LocalRidgeAccuracy(ds *data.Dataset, lambda float64) (float64, error) {
	var tot float64
	d := ds.P()
	for i := 0; i < ds.NumUsers(); i++ {
		s := ds.UserStart[i]
		m := t.Train
		xs := ds.X.Slice(s, s+m, 0, d).(*mat.Dense)
		var g mat.SymDense
		g.SymOuterK(1, xs)
		for a := 0; a < m; a++ {
			g.SetSym(a, a, g.At(a, a)+lambda)
		}
		var ch mat.Cholesky
		if !ch.Factorize(&g) {
			return 0, fmt.Errorf("local ridge: user %d: singular Gram matrix", i)
		}
		alpha := mat.NewVecDense(m, nil)
		if err := ch.SolveVecTo(alpha, mat.NewVecDense(m, append([]float64(nil), ds.Y[s:s+m]...))); err != nil {
			return 0, fmt.Errorf("local ridge: user %d: %w", i, err)
		}
		w := mat.NewVecDense(d, nil)
		w.MulVec(xs.T(), alpha)
		hx, hy := t.heldOut(ds, i)
		var ok float64
		for j := range hy {
			if signOf(mat.Dot(hx.RowView(j), w)) == signOf(hy[j]) {
				ok++
			}
		}
		tot += ok / float64(len(hy))
	}
	return tot / float64(ds.NumUsers()), nil
}

// PersonalMethod is one private estimator configuration of the
// personalization study, fitted at every ε of the study.
type PersonalMethod struct {
	Label     string
	Estimator sdk.Estimator
	Params    map[string]string // over the variant's rank and Extra
}

// PersonalFit is the outcome of one fit: mean held-out accuracy, wall
// time, and the notes and scalars the result carried.
type PersonalFit struct {
	Accuracy, Seconds float64
	Result            *sdk.Result
}

// FitPersonal runs one estimator on the task's data set and scores it.
// The task's holdout and head_data=all are added to the parameters unless
// given.
func (t PersonalTask) FitPersonal(ctx context.Context, ds *data.Dataset, est sdk.Estimator, params map[string]string, grant privacy.Grant, seed uint64) (*PersonalFit, error) {
	p := with(map[string]string{"holdout": fmt.Sprint(t.holdoutFraction()), "head_data": "all"}, params)
	t0 := time.Now()
	res, _, err := sdk.RunLocal(ctx, est, ds, p, grant, sdk.LocalOptions{Seed: &seed})
	if err != nil {
		return nil, err
	}
	secs := time.Since(t0).Seconds()
	u, v := findMatrix(res, "U"), findMatrix(res, "V")
	if u == nil || v == nil {
		return nil, fmt.Errorf("result lacks U or V")
	}
	acc, err := t.Accuracy(ds, u, v, findMatrix(res, "V_user_ids"))
	if err != nil {
		return nil, err
	}
	return &PersonalFit{Accuracy: acc, Seconds: secs, Result: res}, nil
}

// RandomRepAccuracy is the "random representation, local heads" reference:
// a data-independent random orthonormal U (d×k, Q of a Gaussian matrix) and
// every user's least-squares head on its Train rows, scored through
// fedrep.Predict.
func (t PersonalTask) RandomRepAccuracy(ds *data.Dataset, k int, seed uint64) (float64, error) {
	d := ds.P()
	u := gen.RandomOrthonormal(d, k, rand.New(rand.NewPCG(seed, 0x5eed)))
	var tot float64
	for i := 0; i < ds.NumUsers(); i++ {
		s := ds.UserStart[i]
		var a mat.Dense
		a.Mul(ds.X.Slice(s, s+t.Train, 0, d), u)
		var head mat.VecDense
		if err := head.SolveVec(&a, mat.NewVecDense(t.Train, append([]float64(nil), ds.Y[s:s+t.Train]...))); err != nil {
			return 0, fmt.Errorf("random representation: user %d: %w", i, err)
		}
		acc, err := t.accuracy(ds, i, u, head.RawVector().Data)
		if err != nil {
			return 0, err
		}
		tot += acc
	}
	return tot / float64(ds.NumUsers()), nil
}

// scalarOf returns the named scalar of a result (NaN when absent).
func scalarOf(res *sdk.Result, name string) float64 {
	for _, s := range res.Scalars {
		if s.Name == name {
			return s.Value
		}
	}
	return math.NaN()
}

// PersonalVariant is one task of the personalization study and the rank
// the shared representation uses on it.
type PersonalVariant struct {
	Name string
	Task PersonalTask
	// Rank is given to every fit (0: the estimators' own default rank, and
	// no random-representation reference).
	Rank int
	// Methods, when set, are the private configurations run at every ε
	// instead of the study's standard list (fedrep-private's defaults and
	// the additions AltMin, CompareZCDP and the config's Classify ask for).
	Methods []PersonalMethod
	// Extra parameters every fedrep estimator of this variant gets
	// (declared, public choices such as local_fraction).
	Extra map[string]string
	// Tunes are the private selections run on this variant, each checked
	// against its candidates fitted one by one with the whole grant.
	Tunes []PersonalTune
	// AltMin adds fedrep-privaltmin (defaults, same rank) at every ε.
	AltMin bool
	// CompareZCDP adds fedrep-private's defaults with noise=zcdp (the
	// calibration before noise=exact became the default) at every ε.
	CompareZCDP bool
}

// PersonalTune is one private selection of the study: fedrep-private with
// select=Key=Values, and, as its reference, every candidate (Key = one of
// Values) fitted alone with the whole grant.
type PersonalTune struct {
	Label  string
	Key    string // rank or clip_quantile
	Values string // comma-separated candidates
	// Eps are the ε at which the selection runs (nil: every ε of the study).
	Eps []float64
	// CandidateEps are the ε at which every candidate is also fitted alone
	// (nil: wherever the selection runs).
	CandidateEps []float64
}

// runsAt reports whether the selection runs at ε.
func (pt PersonalTune) runsAt(eps float64) bool {
	return pt.Eps == nil || slices.Contains(pt.Eps, eps)
}

// tunedLabel is the method label of the selection's own fits.
func (pt PersonalTune) tunedLabel() string {
	return "fedrep-private, private selection of " + pt.Label + " (" + pt.Values + ")"
}

// candidateLabel is the method label of one candidate fitted alone.
func (pt PersonalTune) candidateLabel(v string) string {
	return fmt.Sprintf("  candidate %s = %s alone, whole grant", pt.Key, v)
}

// PersonalStudyConfig is the personalization study of issue 18.
type PersonalStudyConfig struct {
	Variants []PersonalVariant
	Eps      []float64
	Delta    float64
	Seeds    int
	// SeedList, when set, are the seeds run (instead of 1…Seeds), so that
	// one study can be run in parts and merged (MergePersonalRows).
	SeedList []int
	// Classify adds fedrep-classify (defaults, same rank) at every ε.
	Classify bool
	Progress func(string)
}

// DefaultPersonalStudy is the study of bench/results/fedrep.md §4: the
// issue's task (5000 users, 6 + 4 rows, rank 3) and the harder variant with
// 2 training rows per user at rank 9 (the differences of the 10 class
// means span 9 dimensions), one with two classes on each side and 4
// training rows, and one with 2 training rows and twice the users.
func DefaultPersonalStudy() PersonalStudyConfig {
	base := DefaultPersonalTask()
	few := base
	few.Train = 2
	wide := base
	wide.Train, wide.ClassesPerSide = 4, 2
	many := base
	many.Users, many.Train, many.Holdout = 10000, 2, 2
	return PersonalStudyConfig{
		Variants: []PersonalVariant{
			{Name: "issue task: 5000 users, 6 training + 4 held-out rows, rank 3", Task: base, Rank: 3, AltMin: true, CompareZCDP: true, Tunes: []PersonalTune{
				{Label: "rank", Key: "rank", Values: "2,3,5,9", Eps: []float64{0.5, 1}, CandidateEps: []float64{1}},
				{Label: "clip quantile", Key: "clip_quantile", Values: "0.25,0.5,0.75,0.9", Eps: []float64{1}},
			}},
			{Name: "harder: 5000 users, 2 training + 4 held-out rows, rank 9", Task: few, Rank: 9},
			{Name: "harder: 5000 users, two classes on each side, 4 training + 4 held-out rows, rank 9", Task: wide, Rank: 9},
			{Name: "harder, twice the users: 10000 users, 2 training + 2 held-out rows, rank 9", Task: many, Rank: 9},
		},
		Eps: []float64{0.5, 1, 2, 4}, Delta: 1e-6, Seeds: 3, Classify: true,
	}
}

// PersonalRow is one method at one ε (0: non-private) on one variant:
// medians over seeds of the mean held-out accuracy and of the wall time.
type PersonalRow struct {
	Variant, Method    string
	Epsilon            float64
	Accuracy, Min, Max float64
	Seconds            float64
	Values             []float64
	Chosen             []string // private selection: the chosen configuration per seed
	ChosenClip         []float64
}

// RunPersonalStudy runs every variant, method and ε over the seeds.
func RunPersonalStudy(ctx context.Context, cfg PersonalStudyConfig) ([]PersonalRow, error) {
	var rows []PersonalRow
	for _, v := range cfg.Variants {
		col := &personalCells{cells: map[string]map[float64]*personalCell{}, variant: v.Name, progress: cfg.Progress}
		seeds := cfg.SeedList
		if seeds == nil {
			for s := 1; s <= cfg.Seeds; s++ {
				seeds = append(seeds, s)
			}
		}
		for _, s := range seeds {
			if err := runPersonalSeed(ctx, cfg, v, s, col); err != nil {
				return nil, err
			}
		}
		rows = append(rows, col.rows(cfg.Eps)...)
	}
	return rows, nil
}

// personalCell collects one (method, ε) cell of a variant's table.
type personalCell struct {
	acc, secs []float64
	chosen    []string
	clip      []float64
}

// personalCells collects a variant's cells in the order methods appear.
type personalCells struct {
	cells    map[string]map[float64]*personalCell
	order    []string
	variant  string
	progress func(string)
}

// add records one fit's (or one reference's, f nil) accuracy.
func (pc *personalCells) add(m string, eps float64, f *PersonalFit, acc float64) {
	if pc.cells[m] == nil {
		pc.cells[m] = map[float64]*personalCell{}
		pc.order = append(pc.order, m)
	}
	c := pc.cells[m][eps]
	if c == nil {
		c = &personalCell{}
		pc.cells[m][eps] = c
	}
	c.acc = append(c.acc, acc)
	if f != nil {
		c.secs = append(c.secs, f.Seconds)
		if r := scalarOf(f.Result, "selected_rank"); !math.IsNaN(r) {
			c.chosen = append(c.chosen, fmt.Sprintf("rank %g, q %g", r, scalarOf(f.Result, "selected_clip_quantile")))
		}
		if ψ := scalarOf(f.Result, "clip"); !math.IsNaN(ψ) {
			c.clip = append(c.clip, ψ)
		}
	}
	if pc.progress != nil {
		pc.progress(fmt.Sprintf("%s | %s ε=%g: %.4f", pc.variant, m, eps, acc))
	}
}

// rows summarises the cells: median accuracy, its range and median time.
func (pc *personalCells) rows(eps []float64) []PersonalRow {
	var rows []PersonalRow
	for _, m := range pc.order {
		for _, e := range append([]float64{0}, eps...) {
			c := pc.cells[m][e]
			if c == nil {
				continue
			}
			med, lo, hi := medianRange(c.acc)
			secs, _, _ := medianRange(c.secs)
			if math.IsNaN(secs) {
				secs = 0 // a reference computed in the study, not timed (JSON has no NaN)
			}
			rows = append(rows, PersonalRow{Variant: pc.variant, Method: m, Epsilon: e, Accuracy: med, Min: lo, Max: hi, Seconds: secs,
				Values: c.acc, Chosen: c.chosen, ChosenClip: c.clip})
		}
	}
	return rows
}

// runPersonalSeed builds variant v's task at seed s and records the
// references (each user alone, a random representation, non-private
// FedRep) and every private configuration at every ε.
func runPersonalSeed(ctx context.Context, cfg PersonalStudyConfig, v PersonalVariant, s int, col *personalCells) error {
	ds, err := v.Task.Build(uint64(s))
	if err != nil {
		return err
	}
	a, err := v.Task.LocalRidgeAccuracy(ds, 1)
	if err != nil {
		return err
	}
	col.add("each user alone (ridge λ = 1)", 0, nil, a)
	if v.Rank > 0 {
		if a, err = v.Task.RandomRepAccuracy(ds, v.Rank, uint64(s)); err != nil {
			return err
		}
		col.add("random representation, local heads", 0, nil, a)
	}
	params := func(over map[string]string) map[string]string {
		p := map[string]string{}
		if v.Rank > 0 {
			p["rank"] = fmt.Sprint(v.Rank)
		}
		return with(with(p, v.Extra), over)
	}
	seed := uint64(100 * s)
	f, err := v.Task.FitPersonal(ctx, ds, fedrep.NonPrivateFedRep{}, params(nil), privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, seed)
	if err != nil {
		return fmt.Errorf("%s: non-private FedRep: %w", v.Name, err)
	}
	col.add("non-private FedRep", 0, f, f.Accuracy)
	runs := v.Methods
	if runs == nil {
		runs = []PersonalMethod{{"fedrep-private, defaults", fedrep.PrivateFedRep{}, nil}}
		if v.CompareZCDP {
			runs = append(runs, PersonalMethod{"fedrep-private, defaults with noise=zcdp (before)", fedrep.PrivateFedRep{}, map[string]string{"noise": "zcdp"}})
		}
		if v.AltMin {
			runs = append(runs, PersonalMethod{"fedrep-privaltmin, defaults", fedrep.PrivAltMin{}, nil})
		}
		if cfg.Classify {
			runs = append(runs, PersonalMethod{"fedrep-classify, defaults", fedrep.Classify{}, nil})
		}
	}
	for _, eps := range cfg.Eps {
		grant := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: eps, Delta: cfg.Delta}
		for _, r := range runs {
			f, err := v.Task.FitPersonal(ctx, ds, r.Estimator, params(r.Params), grant, seed+uint64(10*eps))
			if err != nil {
				return fmt.Errorf("%s: %s at ε = %g: %w", v.Name, r.Label, eps, err)
			}
			col.add(r.Label, eps, f, f.Accuracy)
		}
		for _, pt := range v.Tunes {
			if !pt.runsAt(eps) {
				continue
			}
			if err := runPersonalTune(ctx, v, pt, ds, grant, seed+uint64(10*eps), params, col); err != nil {
				return err
			}
		}
	}
	return nil
}

// runPersonalTune runs one private selection at one grant, and every
// candidate alone with the whole grant.
func runPersonalTune(ctx context.Context, v PersonalVariant, pt PersonalTune, ds *data.Dataset, grant privacy.Grant, seed uint64, params func(map[string]string) map[string]string, col *personalCells) error {
	f, err := v.Task.FitPersonal(ctx, ds, fedrep.PrivateFedRep{}, params(map[string]string{"select": pt.Key + "=" + pt.Values, "select_score": "accuracy"}), grant, seed)
	if err != nil {
		return fmt.Errorf("%s: selection of %s at ε = %g: %w", v.Name, pt.Label, grant.Epsilon, err)
	}
	col.add(pt.tunedLabel(), grant.Epsilon, f, f.Accuracy)
	if pt.CandidateEps != nil && !slices.Contains(pt.CandidateEps, grant.Epsilon) {
		return nil
	}
	for _, c := range strings.Split(pt.Values, ",") {
		f, err := v.Task.FitPersonal(ctx, ds, fedrep.PrivateFedRep{}, params(map[string]string{pt.Key: c}), grant, seed)
		if err != nil {
			return fmt.Errorf("%s: candidate %s = %s at ε = %g: %w", v.Name, pt.Key, c, grant.Epsilon, err)
		}
		col.add(pt.candidateLabel(c), grant.Epsilon, f, f.Accuracy)
	}
	return nil
}

// PersonalMarkdown renders the rows, one table per variant.
func PersonalMarkdown(rows []PersonalRow) string {
	var b strings.Builder
	cur := ""
	for _, r := range rows {
		if r.Variant != cur {
			cur = r.Variant
			fmt.Fprintf(&b, "\n**%s**\n\n| method | ε | held-out accuracy (median [min–max]) | s/fit | chosen |\n|---|---|---|---|---|\n", cur)
		}
		eps := fmt.Sprint(r.Epsilon)
		if r.Epsilon == 0 {
			eps = "—"
		}
		secs := "—"
		if r.Seconds > 0 {
			secs = fmt.Sprintf("%.2f", r.Seconds)
		}
		fmt.Fprintf(&b, "| %s | %s | %.4f [%.4f–%.4f] | %s | %s |\n", r.Method, eps, r.Accuracy, r.Min, r.Max, secs, strings.Join(r.Chosen, "; "))
	}
	return b.String()
}

// PersonalTuningMarkdown checks every private selection against its
// candidates: per ε, the best candidate alone (median over seeds), the
// selection's own figure, how far the candidate it picked falls behind the
// best one of the same seed (the pick's regret, on the candidates' whole-
// grant figures), and how far the defaults fall behind the best figure the
// selection found (its own, or a candidate's).
func PersonalTuningMarkdown(cfg PersonalStudyConfig, rows []PersonalRow) string {
	var b strings.Builder
	find := func(variant, method string, eps float64) *PersonalRow {
		for i := range rows {
			if rows[i].Variant == variant && rows[i].Method == method && rows[i].Epsilon == eps {
				return &rows[i]
			}
		}
		return nil
	}
	for _, v := range cfg.Variants {
		for _, pt := range v.Tunes {
			fmt.Fprintf(&b, "\n**%s — private selection of %s (%s) against its candidates**\n\n", v.Name, pt.Label, pt.Values)
			b.WriteString("| ε | best candidate alone | selection (median) | picks per seed | pick regret (median, max) | defaults − best private figure |\n|---|---|---|---|---|---|\n")
			for _, eps := range cfg.Eps {
				tuned := find(v.Name, pt.tunedLabel(), eps)
				if tuned == nil {
					continue
				}
				vals := strings.Split(pt.Values, ",")
				cands := make([]*PersonalRow, len(vals))
				best := -1
				for i, c := range vals {
					cands[i] = find(v.Name, pt.candidateLabel(c), eps)
					if cands[i] != nil && (best < 0 || cands[i].Accuracy > cands[best].Accuracy) {
						best = i
					}
				}
				if best < 0 {
					continue
				}
				var regret []float64
				for s, ch := range tuned.Chosen {
					j := chosenIndex(pt.Key, ch, vals)
					if j < 0 || cands[j] == nil || s >= len(cands[j].Values) {
						continue
					}
					top := math.Inf(-1)
					for _, c := range cands {
						if c != nil && s < len(c.Values) {
							top = math.Max(top, c.Values[s])
						}
					}
					regret = append(regret, top-cands[j].Values[s])
				}
				med, _, hi := medianRange(regret)
				bestPriv := math.Max(tuned.Accuracy, cands[best].Accuracy)
				def := find(v.Name, "fedrep-private, defaults", eps)
				gap := math.NaN()
				if def != nil {
					gap = def.Accuracy - bestPriv
				}
				fmt.Fprintf(&b, "| %g | %s = %s: %.4f | %.4f | %s | %.4f, %.4f | %+.4f |\n", eps, pt.Key, vals[best], cands[best].Accuracy,
					tuned.Accuracy, strings.Join(tuned.Chosen, "; "), med, hi, gap)
			}
		}
	}
	return b.String()
}

// chosenIndex returns the index among vals of the candidate a selection
// reported ("rank R, q Q"), or −1.
func chosenIndex(key, chosen string, vals []string) int {
	var r, q float64
	if _, err := fmt.Sscanf(chosen, "rank %g, q %g", &r, &q); err != nil {
		return -1
	}
	x := r
	if key == "clip_quantile" {
		x = q
	}
	for i, v := range vals {
		var f float64
		if _, err := fmt.Sscan(v, &f); err == nil && f == x {
			return i
		}
	}
	return -1
}

// MergePersonalRows merges the rows of studies run in parts (each part a
// set of seeds of some variants): per (variant, method, ε) the per-seed
// values are concatenated in the order of the parts, and the medians and
// ranges recomputed (wall times: the median of the parts' medians).
func MergePersonalRows(parts ...[]PersonalRow) []PersonalRow {
	var out []PersonalRow
	idx := map[string]int{}
	secs := map[string][]float64{}
	for _, rows := range parts {
		for _, r := range rows {
			key := fmt.Sprintf("%s\x00%s\x00%g", r.Variant, r.Method, r.Epsilon)
			i, ok := idx[key]
			if !ok {
				idx[key] = len(out)
				r.Values = append([]float64(nil), r.Values...)
				r.Chosen = append([]string(nil), r.Chosen...)
				r.ChosenClip = append([]float64(nil), r.ChosenClip...)
				out = append(out, r)
				secs[key] = []float64{r.Seconds}
				continue
			}
			m := &out[i]
			m.Values = append(m.Values, r.Values...)
			m.Chosen = append(m.Chosen, r.Chosen...)
			m.ChosenClip = append(m.ChosenClip, r.ChosenClip...)
			secs[key] = append(secs[key], r.Seconds)
		}
	}
	for key, i := range idx {
		out[i].Accuracy, out[i].Min, out[i].Max = medianRange(out[i].Values)
		out[i].Seconds, _, _ = medianRange(secs[key])
	}
	return out
}
