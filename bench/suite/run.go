package suite

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// Record is one finished cell, one JSON line in results.jsonl.
type Record struct {
	Scenario  string             `json:"scenario"`
	Variant   string             `json:"variant"`
	Estimator string             `json:"estimator"`
	PluginDir string             `json:"plugin_dir"`
	Backend   string             `json:"backend"`
	XName     string             `json:"x_name"`
	X         string             `json:"x"`
	Epsilon   float64            `json:"epsilon"`
	Rep       int                `json:"rep"`
	WallS     float64            `json:"wall_s"`
	CPUS      float64            `json:"cpu_s"`
	MaxRSSKiB float64            `json:"max_rss_kib"`
	Metrics   map[string]float64 `json:"metrics"`
	Error     string             `json:"error,omitempty"`
	When      time.Time          `json:"when"`
}

// Options configures a run.
type Options struct {
	Dplr    string    // the host binary
	OutDir  string    // results go to OutDir/<scenario>/results.jsonl
	Quick   bool      // QuickRepetitions instead of Repetitions
	Force   bool      // re-run finished cells
	Log     io.Writer // progress lines
	WorkDir string    // generated data and scratch (default OutDir/<scenario>/work)
}

// Run executes the scenario's unfinished cells, appending each result as
// it completes (an interrupted run keeps what it finished).
func Run(ctx context.Context, s *Scenario, opt Options) error {
	dir := filepath.Join(opt.OutDir, s.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	resPath := filepath.Join(dir, "results.jsonl")
	done := map[string]bool{}
	if opt.Force {
		if err := os.Remove(resPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else {
		recs, err := ReadResults(resPath)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Error == "" {
				done[r.Variant+"|"+r.X+"|"+strconv.Itoa(r.Rep)] = true
			}
		}
	}
	work := opt.WorkDir
	work = cmp.Or(work, filepath.Join(dir, "work"))
	reps := s.Repetitions
	if opt.Quick {
		reps = s.QuickRepetitions
	}
	cells := s.Cells(reps)
	f, err := os.OpenFile(resPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	t0 := time.Now()
	for i, c := range cells {
		if err := ctx.Err(); err != nil {
			return err
		}
		if done[c.Key()] {
			continue
		}
		fmt.Fprintf(opt.Log, "bench %s [%d/%d %.0fs] %s %s=%s rep %d\n", s.Name, i+1, len(cells), time.Since(t0).Seconds(), c.Variant.Name, s.xName(), c.X, c.Rep)
		dataArgs, err := s.prepareData(ctx, opt.Dplr, work, c)
		if err != nil {
			return fmt.Errorf("scenario %s: data for %s=%s rep %d: %w", s.Name, s.xName(), c.X, c.Rep, err)
		}
		rec := s.runCell(ctx, opt, work, c, dataArgs)
		line, _ := json.Marshal(rec)
		if _, err := f.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("recording %s: %w", resPath, err)
		}
		if rec.Error != "" {
			fmt.Fprintf(opt.Log, "bench %s: %s failed: %s\n", s.Name, c.Key(), rec.Error)
		}
	}
	return nil
}

// dataParams returns the model parameters of a cell (the sweep applied).
func (s *Scenario) dataParams(c Cell) map[string]string {
	p := maps.Clone(s.Data.Params)
	if p == nil {
		p = map[string]string{}
	}
	if s.Sweep != nil {
		p[s.Sweep.Param] = c.X
	}
	return p
}

// prepareData generates (once) the data a cell uses and returns the fit
// flags that point at it.
func (s *Scenario) prepareData(ctx context.Context, dplr, work string, c Cell) ([]string, error) {
	if s.Data.Path != "" {
		return append([]string{"--data", s.Data.Path}, s.Data.Args...), nil
	}
	p := s.dataParams(c)
	seed := uint64(c.Rep + 1)
	if s.Data.FixedSeed != nil {
		seed = *s.Data.FixedSeed
	}
	tag := s.Data.Model + "-seed" + strconv.FormatUint(seed, 10)
	if s.Sweep != nil {
		tag += "-" + s.Sweep.Param + c.X
	}
	dir := filepath.Join(work, "data", tag)
	if _, err := os.Stat(filepath.Join(dir, "dataset.json")); err == nil {
		return []string{"--data", dir}, nil
	}
	args := []string{"gen", s.Data.Model, "--out", dir, "--seed", strconv.FormatUint(seed, 10)}
	for k, v := range p {
		args = append(args, "--set", k+"="+v)
	}
	cmd := exec.CommandContext(ctx, dplr, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("dplr gen: %v: %s", err, bytes.TrimSpace(out))
	}
	return []string{"--data", dir}, nil
}

func (s *Scenario) runCell(ctx context.Context, opt Options, work string, c Cell, dataArgs []string) Record {
	v := c.Variant
	rec := Record{Scenario: s.Name, Variant: v.Name, Estimator: v.Estimator, PluginDir: v.PluginDir, XName: s.xName(),
		X: c.X, Epsilon: c.Epsilon, Rep: c.Rep, Metrics: map[string]float64{}, When: time.Now().UTC()}
	bin, args := opt.Dplr, []string{"fit"}
	if len(v.Command) > 0 {
		bin, args = v.Command[0], slices.Clone(v.Command[1:])
	}
	args = append(args, v.Estimator, "--plugin-dir", v.PluginDir, "--home", filepath.Join(work, "home"),
		"--out", filepath.Join(work, "out"), "--json", "--quiet", "--seed", strconv.Itoa(1000+c.Rep))
	args = append(args, dataArgs...)
	switch {
	case v.NonPrivate:
		args = append(args, "--non-private")
	case v.PureOnly:
		args = append(args, "--epsilon", fmt.Sprint(c.Epsilon))
	default:
		args = append(args, "--epsilon", fmt.Sprint(c.Epsilon), "--delta", fmt.Sprint(s.Delta))
	}
	for k, val := range v.Params {
		args = append(args, "--set", k+"="+val)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Duration(s.TimeoutSeconds*float64(time.Second)))
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	rec.WallS = time.Since(t0).Seconds()
	// ProcessState is nil when the host could not be started at all.
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rec.CPUS = tv(ru.Utime) + tv(ru.Stime)
		}
	}
	if err != nil {
		rec.Error = fmt.Sprintf("%v: %s", err, lastLine(stderr.String()))
		return rec
	}
	type named []struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
	}
	var rep struct {
		Backend string `json:"backend"`
		Metrics named  `json:"metrics"`
		Outputs struct {
			Scalars named `json:"scalars"`
		} `json:"outputs"`
		Privacy struct {
			Epsilon, Delta, Rho float64
		} `json:"privacy"`
		Timings map[string]float64 `json:"timings"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		rec.Error = "unreadable result: " + err.Error()
		return rec
	}
	rec.Backend = rep.Backend
	for _, m := range rep.Metrics {
		rec.Metrics[m.Name] = m.Value
	}
	for _, m := range rep.Outputs.Scalars {
		if _, dup := rec.Metrics[m.Name]; !dup {
			rec.Metrics[m.Name] = m.Value
		}
	}
	for k, val := range rep.Timings {
		rec.Metrics["timing."+k] = val
	}
	rec.Metrics["privacy.epsilon"] = rep.Privacy.Epsilon
	rec.Metrics["privacy.rho"] = rep.Privacy.Rho
	rec.MaxRSSKiB = rep.Timings["host_max_rss_kib"] + rep.Timings["plugin_max_rss_kib"]
	return rec
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func lastLine(s string) string {
	sc := bufio.NewScanner(bytes.NewBufferString(s))
	last := ""
	for sc.Scan() {
		if t := sc.Text(); t != "" {
			last = t
		}
	}
	return last
}

// ReadResults reads a results.jsonl file (missing: no records).
func ReadResults(path string) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// A run killed mid-write leaves a partial last line: skip it.
			continue
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
