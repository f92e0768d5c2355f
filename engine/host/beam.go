package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// BeamBinary is the executable that runs dplr's statistics pipelines on
// Apache Beam (beam/cmd/dplr-beam, a separate Go module so that the host
// never links Beam).
const BeamBinary = "dplr-beam"

// BeamRunners are the runners dplr-beam accepts: prism (embedded,
// in-process, the only one tested here) and Beam's portable runners.
var BeamRunners = []string{"prism", "flink", "spark", "dataflow", "universal"}

// FindBeam locates dplr-beam: $DPLR_BEAM when set, else beside the host
// executable, else in the plugin directories, else on $PATH.
func FindBeam(pluginDirs []string) (string, error) {
	if p := os.Getenv("DPLR_BEAM"); p != "" {
		return p, nil
	}
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dirs = append(dirs, filepath.Dir(exe))
	}
	dirs = append(dirs, pluginDirs...)
	for _, d := range dirs {
		p := filepath.Join(d, BeamBinary)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(BeamBinary); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found beside dplr, in the plugin directories or on PATH (build it with `make beam-build`, or set DPLR_BEAM)", BeamBinary)
}

// BeamRequest is one statistics pipeline run.
type BeamRequest struct {
	// Binary is dplr-beam's path (FindBeam).
	Binary string
	// Data is the glob of shards (.npy or CSV files) on any filesystem
	// the Beam build knows.
	Data string
	// Clip is the public row-norm bound applied to each row before
	// aggregation (0: none).
	Clip float64
	// Runner is the Beam runner (default prism); BeamFlags are passed
	// through to it (e.g. --endpoint, --project, --region).
	Runner    string
	BeamFlags []string
	// Format, Header, Scale, Features and FeatureList say how shards are
	// read, as in BeamData (zero values for the defaults); the statistics
	// pipeline reads rows, which have no user or response column.
	Format, Header string
	Scale          float64
	Features       []string
	FeatureList    string
	// Out is the directory the statistics are written to.
	Out string
	// Work, when set, is a directory the caller owns: dplr-beam's
	// temporary files go to a fresh directory below it (else below the
	// system's temporary directory), removed when it exits.
	Work string
	// Stderr receives the pipeline's progress.
	Stderr io.Writer
}

// ErrPipeline is wrapped when the statistics pipeline failed: nothing was
// reserved or spent.
var ErrPipeline = errors.New("beam pipeline failed")

// RunBeam runs `dplr-beam stats` and waits for it, its temporary files in
// a directory removed afterwards (see Work). The pipeline runs before
// anything is reserved: its failure spends nothing.
func RunBeam(ctx context.Context, req BeamRequest) error {
	args := []string{"stats", "--data", req.Data, "--clip", strconv.FormatFloat(req.Clip, 'g', -1, 64), "--out", req.Out}
	if req.Runner != "" {
		args = append(args, "--runner", req.Runner)
	}
	args = append(args, readArgs(req.Format, req.Header, req.Scale, req.Features, req.FeatureList, "", "")...)
	args = append(args, req.BeamFlags...)
	tmp, cleanup, err := beamTemp(req.Work)
	if err != nil {
		return fmt.Errorf("%w: %w; nothing was reserved or spent", ErrPipeline, err)
	}
	defer cleanup()
	cmd := exec.CommandContext(ctx, req.Binary, args...)
	cmd.Stdout, cmd.Stderr = req.Stderr, req.Stderr
	withTemp(cmd, tmp)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w; nothing was reserved or spent", ErrPipeline, ctx.Err())
		}
		return fmt.Errorf("%w (%s: %v); nothing was reserved or spent", ErrPipeline, filepath.Base(req.Binary), err)
	}
	return nil
}
