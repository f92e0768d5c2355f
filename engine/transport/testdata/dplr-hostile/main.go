// Command dplr-hostile is a deliberately hostile dplr plugin used by the
// host's containment tests: it floods its output streams, leaves children
// behind, reads what it should not and declares huge outputs.
// DPLR_HOSTILE_MODE selects the behaviour; DPLR_HOSTILE_BYTES sizes the
// floods (default 8 MiB); DPLR_HOSTILE_READ names a file it tries to read.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/dplr/dplr/engine/transport"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

type server struct {
	dplrpb.UnimplementedEstimatorsServer
	mode  string
	extra string // reported in the catalogue's version field
}

func (s *server) Catalogue(context.Context, *dplrpb.CatalogueRequest) (*dplrpb.CatalogueResponse, error) {
	v := fmt.Sprintf("pid=%d;home=%s;read=%s;%s", os.Getpid(), os.Getenv("DPLR_HOME"), tryRead(os.Getenv("DPLR_HOSTILE_READ")), s.extra)
	return &dplrpb.CatalogueResponse{Plugin: "hostile", Version: v, Backend: "gonum", ProtocolVersion: transport.ProtocolVersion,
		Estimators: []*dplrpb.EstimatorInfo{{Name: "hostile-" + s.mode, DataKind: "rows", Grants: []string{"approx"}}}}, nil
}

// tryRead reports whether path could be read ("" when none is given).
func tryRead(path string) string {
	if path == "" {
		return ""
	}
	if _, err := os.ReadFile(path); err != nil {
		return "denied"
	}
	return "ok"
}

func (s *server) Fit(req *dplrpb.FitRequest, st dplrpb.Estimators_FitServer) error {
	switch s.mode {
	case "big-outputs":
		// Three matrices of 1024×1024 values, each under any per-matrix
		// cap, declared before any data is sent.
		for _, n := range []string{"a", "b", "c"} {
			if err := st.Send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Matrix{Matrix: &dplrpb.MatrixChunk{
				Name: n, Rows: 1024, Cols: 1024, Offset: 0, Data: []float64{1}}}}); err != nil {
				return err
			}
		}
		time.Sleep(time.Hour)
	case "fit-stderr-flood":
		flood(os.Stderr, '\n')
		time.Sleep(time.Hour)
	case "slow":
		// Ends its stream normally, without a result, after a while.
		time.Sleep(300 * time.Millisecond)
		return nil
	case "read":
		// Reports what it could read during the fit: the data set's file
		// and the file named by DPLR_HOSTILE_READ.
		msg := fmt.Sprintf("data=%s;other=%s", tryRead(req.GetData().GetX().GetPath()), tryRead(os.Getenv("DPLR_HOSTILE_READ")))
		return st.Send(&dplrpb.FitEvent{Event: &dplrpb.FitEvent_Log{Log: msg}})
	}
	return nil
}

func floodBytes() int {
	if n, err := strconv.Atoi(os.Getenv("DPLR_HOSTILE_BYTES")); err == nil {
		return n
	}
	return 8 << 20
}

// flood writes floodBytes bytes to f, with a newline every 64 KiB when sep
// is '\n' and none at all when sep is 0.
func flood(f *os.File, sep byte) {
	buf := []byte(strings.Repeat("x", 64<<10))
	if sep != 0 {
		buf[len(buf)-1] = sep
	}
	for n := floodBytes(); n > 0; n -= len(buf) {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}

// child starts a copy of this executable that sleeps an hour, holding the
// plugin's stdout and stderr, and returns its pid.
func child() int {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "DPLR_HOSTILE_MODE=sleeper")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "hostile: cannot start child:", err)
		os.Exit(9)
	}
	return cmd.Process.Pid
}

func main() {
	mode := os.Getenv("DPLR_HOSTILE_MODE")
	extra := ""
	switch mode {
	case "sleeper":
		time.Sleep(time.Hour)
		return
	case "stdout-flood":
		// No handshake line: a flood without a newline.
		flood(os.Stdout, 0)
		time.Sleep(time.Hour)
	case "stdout-lines":
		// A flood of short lines before any handshake.
		line := []byte(strings.Repeat("garbage ", 16) + "\n")
		for n := floodBytes(); n > 0; n -= len(line) {
			if _, err := os.Stdout.Write(line); err != nil {
				break
			}
		}
		time.Sleep(time.Hour)
	case "stderr-flood":
		flood(os.Stderr, '\n')
		time.Sleep(time.Hour)
	case "stderr-flood-noline":
		flood(os.Stderr, 0)
		time.Sleep(time.Hour)
	case "fail-start":
		fmt.Fprintln(os.Stderr, "hostile: cannot load libfoo.so: no such file")
		os.Exit(7)
	case "grandchild-exit":
		// A child keeps the pipes open after the plugin exits.
		child()
		os.Exit(3)
	case "grandchild":
		extra = fmt.Sprintf("child=%d", child())
	case "post-handshake-flood":
		// After the handshake, floods the raw stdout descriptor and the
		// forwarded stderr.
		go func() {
			time.Sleep(100 * time.Millisecond)
			out := os.NewFile(1, "stdout")
			flood(out, '\n')
		}()
	case "setsid-escape":
		// Leaves the process group and ignores the host's death.
		_, _ = syscall.Setsid()
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: transport.Handshake,
		Plugins:         transport.PluginSet(&server{mode: mode, extra: extra}),
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
