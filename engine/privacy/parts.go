package privacy

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// PartedRelease is a declared Gaussian step over a vector released in
// parts, one at a time, each part computable after the earlier ones were
// released: parallel composition over a data-independent partition
// (docs/privacy.md, "Plans and releases"). Each part is drawn once, in
// order; the release counts as drawn when the last part is.
type PartedRelease struct {
	rel     *Release
	partDim int
	next    int // index of the next part to draw
}

// GaussianInParts declares a Gaussian step releasing parts blocks of
// partDim values with ℓ2 sensitivity sens for the whole concatenation,
// paid once from b (see PartedRelease). The grid allowance is that of the
// whole parts·partDim vector.
func (a *Accountant) GaussianInParts(name string, sens float64, partDim, parts int, b Budget) (*PartedRelease, error) {
	if partDim < 1 || parts < 1 {
		return nil, fmt.Errorf("step %q: %d parts of %d values: %w", name, parts, partDim, ErrInvalidBudget)
	}
	rel, err := a.Gaussian(name, sens, partDim*parts, b)
	if err != nil {
		return nil, err
	}
	return &PartedRelease{rel: rel, partDim: partDim}, nil
}

// Scale returns the noise scale σ.
func (p *PartedRelease) Scale() float64 { return p.rel.Scale() }

// Step returns the declared step.
func (p *PartedRelease) Step() Step { return p.rel.Step() }

// startPart checks the next part's length and, for the last part, marks
// the release drawn.
func (p *PartedRelease) startPart(src *Source, n int) error {
	r := p.rel
	parts := r.step.Dim / p.partDim
	switch {
	case src == nil:
		return fmt.Errorf("release %q: no random source: %w", r.step.Name, ErrDraw)
	case p.next >= parts:
		return fmt.Errorf("release %q: all %d parts were already drawn: %w", r.step.Name, parts, ErrDraw)
	case n != p.partDim:
		return fmt.Errorf("release %q: part %d has %d values, but the parts were declared with %d: %w", r.step.Name, p.next+1, n, p.partDim, ErrDraw)
	}
	p.next++
	if p.next == parts {
		return r.acct.claim(r.id)
	}
	return nil
}

// AddPart rounds the next part x to the grid and adds the noise, in place.
func (p *PartedRelease) AddPart(src *Source, x []float64) error {
	if err := p.startPart(src, len(x)); err != nil {
		return err
	}
	p.rel.add(src, x, p.rel.step.Scale)
	return nil
}

// AddSymPart releases the next part as the upper triangle (diagonal
// included) of the symmetric m, in place; the lower triangle mirrors it.
func (p *PartedRelease) AddSymPart(src *Source, m *mat.SymDense) error {
	n := m.SymmetricDim()
	if err := p.startPart(src, n*(n+1)/2); err != nil {
		return err
	}
	raw := m.RawSymmetric()
	for i := 0; i < n; i++ {
		p.rel.add(src, raw.Data[i*raw.Stride+i:i*raw.Stride+n], p.rel.step.Scale)
	}
	return nil
}
