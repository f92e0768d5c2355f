// Command beam-bench measures the rows statistics (count, clipped sum,
// clipped second moment, source identity) computed by the Beam pipeline
// on the embedded prism runner against the single-machine path (one file
// loaded by dataio, second moment by pca.Gram), at several n with p = 784:
// throughput (rows/s) and peak resident memory, each cell in its own
// process. Synthetic shards of 10 000 rows are generated on the fly.
//
//	go run ./cmd/beam-bench [-n 100000,1000000] [-p 784] [-dir DIR] [-out ../bench/results/beam.md]
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/beam/stats"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/plugins/pca"
)

const shardRows = 10000

func main() {
	beam.Init()
	ns := flag.String("n", "100000,1000000", "row counts")
	p := flag.Int("p", 784, "columns")
	dir := flag.String("dir", "", "scratch directory (default a temporary one)")
	out := flag.String("out", "", "append the results table to this file")
	cell := flag.String("cell", "", "internal: run one cell (beam|single) on -data")
	dataArg := flag.String("data", "", "internal")
	flag.Parse()
	if *cell != "" {
		if err := runCell(*cell, *dataArg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := bench(*ns, *p, *dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "beam-bench:", err)
		os.Exit(1)
	}
}

// runCell computes the statistics one way and prints "rows seconds".
func runCell(kind, path string) error {
	ctx := context.Background()
	t0 := time.Now()
	var n int64
	switch kind {
	case "beam":
		st, err := stats.ComputeRows(ctx, path, 1, stats.Options{})
		if err != nil {
			return err
		}
		n = st.N
	case "single":
		ds, id, err := dataio.LoadIdentity(path, dataio.LoadOptions{})
		if err != nil {
			return err
		}
		_ = id
		if _, _, err := pca.Gram(ctx, backend.Default(), ds.X, nil, 1); err != nil {
			return err
		}
		n = int64(ds.N())
	default:
		return fmt.Errorf("cell %q", kind)
	}
	fmt.Printf("%d %.3f\n", n, time.Since(t0).Seconds())
	return nil
}

func bench(nsArg string, p int, dir, out string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "beam-bench-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var table strings.Builder
	head := "| n | p | path | seconds | rows/s | peak RSS (MiB) |\n|---:|---:|---|---:|---:|---:|\n"
	table.WriteString(head)
	if out != "" {
		if err := appendFile(out, head); err != nil {
			return err
		}
	}
	for _, s := range strings.Split(nsArg, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		sdir := filepath.Join(dir, fmt.Sprintf("n%d", n))
		whole := filepath.Join(dir, fmt.Sprintf("whole-%d.npy", n))
		fmt.Fprintf(os.Stderr, "generating %d×%d rows in shards of %d ...\n", n, p, shardRows)
		if err := generate(sdir, whole, n, p); err != nil {
			return err
		}
		for _, kind := range []string{"single", "beam"} {
			data := whole
			if kind == "beam" {
				data = filepath.Join(sdir, "*.npy")
			}
			cmd := exec.Command(self, "-cell", kind, "-data", data)
			cmd.Stderr = nil
			b, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("%s n=%d: %w", kind, n, err)
			}
			var rows int64
			var secs float64
			if _, err := fmt.Sscan(string(b), &rows, &secs); err != nil {
				return fmt.Errorf("%s n=%d: output %q", kind, n, b)
			}
			rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
			line := fmt.Sprintf("| %d | %d | %s | %.1f | %.0f | %.0f |\n", n, p, map[string]string{"beam": "beam (prism)", "single": "single machine"}[kind], secs, float64(rows)/secs, rss)
			fmt.Fprint(os.Stderr, line)
			table.WriteString(line)
			if out != "" { // each cell as it finishes
				if err := appendFile(out, line); err != nil {
					return err
				}
			}
		}
		os.RemoveAll(sdir)
		os.Remove(whole)
	}
	fmt.Print(table.String())
	return nil
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// generate writes n×p Gaussian rows (scaled so that some exceed the clip)
// as shards of shardRows rows and as one file.
func generate(sdir, whole string, n, p int) error {
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		return err
	}
	w, err := os.Create(whole)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := writeHeader(w, n, p); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(n), 1))
	buf := make([]float64, shardRows*p)
	for k := 0; k*shardRows < n; k++ {
		m := min(shardRows, n-k*shardRows)
		x := buf[:m*p]
		for i := range x {
			x[i] = r.NormFloat64() / math.Sqrt(float64(p)) * 1.2
		}
		if err := dataio.SaveNPYFloat64(filepath.Join(sdir, fmt.Sprintf("shard-%05d.npy", k)), []int{m, p}, x); err != nil {
			return err
		}
		if _, err := w.Write(f64bytes(x)); err != nil {
			return err
		}
	}
	return w.Close()
}
