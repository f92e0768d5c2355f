package host

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/privacy"
	"github.com/dplr/dplr/engine/sdk"
)

// Sanity bounds on a run's grant. Outside them no estimator can calibrate
// its noise: the scale Δ/ε (or Δ/sqrt(2ρ)) of a step leaves the range the
// noise samplers represent ([privacy.MinNoiseScale,
// privacy.MaxNoiseScale]) once the grant is split between steps, or the
// "privacy" is void (ε = 1e308). They are refused as usage errors before
// anything is reserved, where the plugin would otherwise fail after the
// reservation.
const (
	MaxEpsilon = 100.0 // ε above this protects nothing
	MinEpsilon = 1e-12 // below this the noise swamps any data (and scales overflow once split)
	MaxRho     = 1e4   // ρ with about the largest ε allowed
	MinRho     = 1e-24 // ρ of ε = MinEpsilon, about
)

// SaneGrant validates a run's grant (privacy.Grant.Validate) and refuses
// budgets outside the sanity bounds.
func SaneGrant(g privacy.Grant) error {
	if err := g.Validate(); err != nil {
		return err
	}
	switch g.Kind {
	case privacy.GrantPure, privacy.GrantApprox:
		if g.Epsilon > MaxEpsilon || g.Epsilon < MinEpsilon {
			return fmt.Errorf("ε = %g is outside the usable range [%g, %g]", g.Epsilon, MinEpsilon, MaxEpsilon)
		}
	case privacy.GrantZCDP:
		if g.Rho > MaxRho || g.Rho < MinRho {
			return fmt.Errorf("ρ = %g is outside the usable range [%g, %g]", g.Rho, MinRho, MaxRho)
		}
	}
	return nil
}

// Sanity bounds on real-valued estimator parameters: a non-zero magnitude
// outside [MinParamMagnitude, MaxParamMagnitude] (clip = 1e-300, say) leaves
// no representable noise scale or sensitivity, whatever the estimator, and
// is refused before reserving even when the estimator's own catalogue sets
// no bound.
const (
	MinParamMagnitude = 1e-100
	MaxParamMagnitude = 1e100
)

// saneParams refuses real-valued parameters outside the sanity bounds: a
// float parameter, or a text one given a number (pca's clip takes auto or
// a number).
func saneParams(specs []sdk.ParamSpec, p sdk.Params) error {
	for _, s := range specs {
		if !p.Has(s.Name) {
			continue
		}
		x := p.Float(s.Name)
		if s.Type == sdk.String {
			var err error
			if x, err = strconv.ParseFloat(strings.TrimSpace(p.String(s.Name)), 64); err != nil {
				continue
			}
		} else if s.Type != sdk.Float {
			continue
		}
		if v := math.Abs(x); v != 0 && (v < MinParamMagnitude || v > MaxParamMagnitude) {
			return fmt.Errorf("%s = %g is outside the range dplr computes with (magnitude 0 or in [%g, %g])", s.Name, x, MinParamMagnitude, MaxParamMagnitude)
		}
	}
	return nil
}

func grantAccepted(kinds []privacy.GrantKind, k privacy.GrantKind) bool {
	return slices.Contains(kinds, k)
}

func grantKinds(ks []privacy.GrantKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// checkRank refuses, before any budget is reserved, a shared `rank`
// parameter that the data cannot support: a rank-r estimate needs r at most
// the dimension its basis lives in (p columns of a row matrix, p features of
// user data, min(d1, d2) for trace regression). Estimators check their own
// finer conditions; this one is common to all and costs nothing to check.
func checkRank(params sdk.Params, h dataio.Handle) error {
	if !params.Has("rank") {
		return nil
	}
	r := params.Int("rank")
	dim, what := h.P, fmt.Sprintf("the data's dimension p = %d", h.P)
	if h.Kind == data.Trace {
		dim, what = min(h.D1, h.D2), fmt.Sprintf("min(d1, d2) = min(%d, %d) of the trace-regression data", h.D1, h.D2)
	}
	if dim > 0 && r > dim {
		return fmt.Errorf("rank = %d exceeds %s", r, what)
	}
	return nil
}

// FormatBytes writes a byte count with a binary unit ("1.5 GiB").
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, i := float64(n), 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.3g %s", v, units[i])
}

// PhysicalMemory returns the machine's physical memory in bytes (0 when
// unknown).
func PhysicalMemory() int64 { return physicalMemory() }
