package fedrepstudy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dplr/dplr/engine/gen"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
	"github.com/dplr/dplr/plugins/fedrep"
)

// TestPersonalExplore (DPLR_STUDY=personal) prints held-out accuracies on
// the personalized Fashion-MNIST task (the digits with DPLR_DIGITS set) for
// the parameter sets in DPLR_PARAMS (";"-separated, each "k=v,k=v"), at
// ε = 1.
func TestPersonalExplore(t *testing.T) {
	if os.Getenv("DPLR_STUDY") != "personal" {
		t.Skip("set DPLR_STUDY=personal")
	}
	task := DefaultPersonalTask()
	if os.Getenv("DPLR_DIGITS") != "" {
		task = DigitsPersonalTask()
	}
	if v, err := strconv.Atoi(os.Getenv("DPLR_TRAIN")); err == nil {
		task.Train = v
	}
	if v, err := strconv.Atoi(os.Getenv("DPLR_USERS")); err == nil {
		task.Users = v
	}
	if v, err := strconv.Atoi(os.Getenv("DPLR_CLASSES")); err == nil {
		task.ClassesPerSide = v
	}
	dataSeed, fitSeed := uint64(1), uint64(7)
	if v, err := strconv.ParseUint(os.Getenv("DPLR_DATASEED"), 10, 64); err == nil {
		dataSeed = v
	}
	if v, err := strconv.ParseUint(os.Getenv("DPLR_FITSEED"), 10, 64); err == nil {
		fitSeed = v
	}
	ds, err := task.Build(dataSeed)
	require.NoError(t, err)
	ctx := context.Background()
	if os.Getenv("DPLR_REFS") != "" {
		a, err := task.LocalRidgeAccuracy(ds, 1)
		require.NoError(t, err)
		t.Logf("local ridge: %.4f", a)
		a, err = task.RandomRepAccuracy(ds, 3, 7)
		require.NoError(t, err)
		t.Logf("random rep: %.4f", a)
		f, err := task.FitPersonal(ctx, ds, fedrep.NonPrivateFedRep{}, map[string]string{"rank": "3"}, privacy.Grant{Kind: privacy.GrantZCDP, Rho: 1}, 7)
		require.NoError(t, err)
		t.Logf("nonprivate: %.4f (%.1fs)", f.Accuracy, f.Seconds)
	}
	for _, ps := range strings.Split(os.Getenv("DPLR_PARAMS"), ";") {
		p := map[string]string{"rank": "3"}
		for _, kv := range strings.Split(ps, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				p[k] = strings.ReplaceAll(v, "/", ",")
			}
		}
		var est sdk.Estimator = fedrep.PrivateFedRep{}
		switch p["est"] {
		case "np":
			est = fedrep.NonPrivateFedRep{}
		case "altmin":
			est = fedrep.PrivAltMin{}
		case "classify":
			est = fedrep.Classify{}
		}
		delete(p, "est")
		f, err := task.FitPersonal(ctx, ds, est, p, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: epsEnv(), Delta: 1e-6}, fitSeed)
		require.NoError(t, err)
		t.Logf("%v: %.4f (%.1fs) notes=%v", p, f.Accuracy, f.Seconds, f.Result.Notes)
	}
}

// epsEnv is DPLR_EPS (default 1).
func epsEnv() float64 {
	if v, err := strconv.ParseFloat(os.Getenv("DPLR_EPS"), 64); err == nil {
		return v
	}
	return 1
}

// TestPaperExplore (DPLR_STUDY=paper) prints the paper configuration's
// population MSE for the parameter sets in DPLR_PARAMS at ε = DPLR_EPS.
func TestPaperExplore(t *testing.T) {
	if os.Getenv("DPLR_STUDY") != "paper" {
		t.Skip("set DPLR_STUDY=paper")
	}
	cfg := PaperStudyConfig()
	cfg.Eps = []float64{epsEnv()}
	cfg.Seeds = 5
	cfg.Methods = nil
	for _, ps := range strings.Split(os.Getenv("DPLR_PARAMS"), ";") {
		p := map[string]string{}
		for _, kv := range strings.Split(ps, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				p[k] = v
			}
		}
		var est sdk.Estimator = fedrep.PrivateFedRep{}
		switch p["est"] {
		case "nonprivate":
			est = fedrep.NonPrivateFedRep{}
		case "altmin":
			est = fedrep.PrivAltMin{}
		}
		delete(p, "est")
		cfg.Methods = append(cfg.Methods, StudyMethod{Label: ps, Estimator: est, Params: p, Private: true})
	}
	cells, err := RunStudy(context.Background(), cfg)
	require.NoError(t, err)
	for _, c := range cells {
		t.Logf("%s: mse %.5f %v dist %.4f", c.Method, c.MSE, c.MSEAll, c.Dist)
	}
}

// TestPersonalTiming (DPLR_STUDY=timing) times fedrep-private and
// fedrep-privaltmin (defaults and groups=all, rank 3) on the task
// at ε = 1, interleaved round by round, DPLR_REPS fits each (default 5),
// and prints the medians of wall and CPU seconds per fit, their ratios to
// fedrep-private, and the load average before and after.
func TestPersonalTiming(t *testing.T) {
	if os.Getenv("DPLR_STUDY") != "timing" {
		t.Skip("set DPLR_STUDY=timing")
	}
	reps := 5
	if v, err := strconv.Atoi(os.Getenv("DPLR_REPS")); err == nil {
		reps = v
	}
	task := DefaultPersonalTask()
	ds, err := task.Build(1)
	require.NoError(t, err)
	g := privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}
	methods := []struct {
		name string
		est  sdk.Estimator
		p    map[string]string
	}{
		{"fedrep-private", fedrep.PrivateFedRep{}, map[string]string{"rank": "3"}},
		{"fedrep-privaltmin", fedrep.PrivAltMin{}, map[string]string{"rank": "3"}},
		{"fedrep-privaltmin groups=all", fedrep.PrivAltMin{}, map[string]string{"rank": "3", "groups": "all"}},
	}
	t.Logf("load before: %s", loadAvg())
	secs := make([][]float64, len(methods))
	cpus := make([][]float64, len(methods))
	for rep := 0; rep < reps; rep++ {
		for i, m := range methods {
			c0 := cpuSeconds()
			f, err := task.FitPersonal(context.Background(), ds, m.est, m.p, g, uint64(7+rep))
			require.NoError(t, err)
			secs[i] = append(secs[i], f.Seconds)
			cpus[i] = append(cpus[i], cpuSeconds()-c0)
		}
	}
	t.Logf("load after: %s", loadAvg())
	base, _, _ := medianRange(secs[0])
	cbase, _, _ := medianRange(cpus[0])
	for i, m := range methods {
		med, lo, hi := medianRange(secs[i])
		cmed, clo, chi := medianRange(cpus[i])
		t.Logf("%s: wall median %.2f s [%.2f–%.2f], %.2f× fedrep-private; CPU median %.2f s [%.2f–%.2f], %.2f× fedrep-private",
			m.name, med, lo, hi, med/base, cmed, clo, chi, cmed/cbase)
	}
}

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// loadAvg is the first three fields of /proc/loadavg ("?" when unreadable).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// TestPersonalDefaults (DPLR_STUDY=defaults) runs DefaultsPersonalStudy
// and prints its tables: DPLR_ITERS (comma-separated T, default "5,10"),
// DPLR_RANKS (fixed ranks, default "3,5,9"; "none": no fixed ranks), DPLR_EPSLIST (default "1"),
// DPLR_SEEDLIST (default "1,2,3"), DPLR_VARIANTS (indices, default all),
// DPLR_SELECT (candidate ranks of a private selection, default none) and
// DPLR_JSONOUT (also write the rows as JSON).
func TestPersonalDefaults(t *testing.T) {
	if os.Getenv("DPLR_STUDY") != "defaults" {
		t.Skip("set DPLR_STUDY=defaults")
	}
	ints := func(env, def string) []int {
		var out []int
		s := os.Getenv(env)
		if s == "" {
			s = def
		}
		if s == "none" {
			return nil
		}
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			require.NoError(t, err, env)
			out = append(out, v)
		}
		return out
	}
	cfg := DefaultsPersonalStudy(ints("DPLR_ITERS", "5,10"), ints("DPLR_RANKS", "3,5,9"), os.Getenv("DPLR_SELECT"))
	cfg.SeedList = ints("DPLR_SEEDLIST", "1,2,3")
	if s := os.Getenv("DPLR_EPSLIST"); s != "" {
		cfg.Eps = nil
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			require.NoError(t, err)
			cfg.Eps = append(cfg.Eps, v)
		}
	}
	if os.Getenv("DPLR_VARIANTS") != "" {
		var vs []PersonalVariant
		for _, i := range ints("DPLR_VARIANTS", "") {
			vs = append(vs, cfg.Variants[i])
		}
		cfg.Variants = vs
	}
	cfg.Progress = func(s string) { t.Log(s) }
	rows, err := RunPersonalStudy(context.Background(), cfg)
	require.NoError(t, err)
	fmt.Print(PersonalMarkdown(rows))
	if p := os.Getenv("DPLR_JSONOUT"); p != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
}

// TestSyntheticClassifyRanks (DPLR_STUDY=synthclass) prints fedrep-classify's
// held-out accuracy at ranks 2, 5 and 9 (ε = 1, fit seeds 1–3) on users
// drawn from a rank-2 truth with ±1 labels (users-lowrank, 5000 users ×
// 10 rows, d = 20; the last 4 rows of every user held out): the second
// task behind the choice of the default rank.
func TestSyntheticClassifyRanks(t *testing.T) {
	if os.Getenv("DPLR_STUDY") != "synthclass" {
		t.Skip("set DPLR_STUDY=synthclass")
	}
	mod, err := gen.Lookup(gen.UsersLowRankName)
	require.NoError(t, err)
	g, err := gen.Run(mod, map[string]string{"users": "5000", "samples": "10", "dim": "20", "rank": "2", "labels": "classification"}, 1)
	require.NoError(t, err)
	ds := g.Data
	task := PersonalTask{Users: ds.NumUsers(), Train: 6, Holdout: 4}
	for _, rank := range []string{"2", "5", "9"} {
		for seed := uint64(1); seed <= 3; seed++ {
			f, err := task.FitPersonal(context.Background(), ds, fedrep.Classify{}, map[string]string{"rank": rank}, privacy.Grant{Kind: privacy.GrantApprox, Epsilon: 1, Delta: 1e-6}, seed)
			require.NoError(t, err)
			t.Logf("rank %s, seed %d: held-out accuracy %.4f", rank, seed, f.Accuracy)
		}
	}
}

// DigitsPersonalTask is the same task built from scikit-learn's digits:
// 2000 users, each with its own pair of digits, 6 training and 4 held-out
// rows per user.
func DigitsPersonalTask() PersonalTask {
	return PersonalTask{Dir: "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz", Users: 2000, Train: 6, Holdout: 4, ClassesPerSide: 1, Digits: true}
}

// DefaultsPersonalStudy measures the defaults of fedrep-private and
// fedrep-classify where users judge them (bench/results/fedrep-defaults.md):
// the task (Fashion-MNIST, 6 training rows per user), its 2- and
// 20-row variants and the same three on the digits (variants 0–5), at
// the estimators' default rank with iterations (T) given explicitly at each
// of iters, the fixed ranks and (when selectRanks is not empty) the private
// selection among selectRanks (scored by accuracy) at the last T of iters,
// so that the rows keep their meaning when a default changes.
func DefaultsPersonalStudy(iters, ranks []int, selectRanks string) PersonalStudyConfig {
	var methods []PersonalMethod
	for _, e := range []struct {
		name string
		est  sdk.Estimator
	}{{"fedrep-private", fedrep.PrivateFedRep{}}, {"fedrep-classify", fedrep.Classify{}}} {
		for _, t := range iters {
			methods = append(methods, PersonalMethod{fmt.Sprintf("%s, default rank, iterations=%d", e.name, t), e.est, map[string]string{"iterations": fmt.Sprint(t)}})
		}
		for _, r := range ranks {
			t := iters[len(iters)-1]
			methods = append(methods, PersonalMethod{fmt.Sprintf("%s, rank=%d, iterations=%d", e.name, r, t), e.est, map[string]string{"rank": fmt.Sprint(r), "iterations": fmt.Sprint(t)}})
		}
		if selectRanks != "" {
			t := iters[len(iters)-1]
			methods = append(methods, PersonalMethod{fmt.Sprintf("%s, select=rank=%s, iterations=%d", e.name, selectRanks, t), e.est,
				map[string]string{"select": "rank=" + selectRanks, "select_score": "accuracy", "iterations": fmt.Sprint(t)}})
		}
	}
	var variants []PersonalVariant
	add := func(t PersonalTask, train, users int) {
		t.Train, t.Users = train, users
		name := "Fashion-MNIST"
		if t.Digits {
			name = "digits"
		}
		variants = append(variants, PersonalVariant{Name: fmt.Sprintf("%s: %d users, %d training + %d held-out rows", name, users, train, t.Holdout), Task: t, Methods: methods})
	}
	// Fashion-MNIST holds 7000 images a class, each used once: 20 rows
	// per user fit 2000 users.
	fm, dg := DefaultPersonalTask(), DigitsPersonalTask()
	add(fm, 6, 5000)
	add(fm, 2, 5000)
	add(fm, 20, 2000)
	for _, m := range []int{2, 6, 20} {
		add(dg, m, 2000)
	}
	return PersonalStudyConfig{Variants: variants, Eps: []float64{1}, Delta: 1e-6, Seeds: 3}
}
