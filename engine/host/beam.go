package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BeamBinary is the executable that runs dplr's aggregation passes on
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

// ErrPipeline is wrapped when a dplr-beam run (describe or a pass)
// failed.
var ErrPipeline = errors.New("beam pipeline failed")
