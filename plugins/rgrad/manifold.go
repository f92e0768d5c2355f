package rgrad

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dplr/dplr/backend"
	"github.com/dplr/dplr/engine/kernel"
)

// Point is a rank-r matrix U·diag(S)·Vᵀ in factored form: U is d1×r and V is
// d2×r with orthonormal columns, S holds the r singular values (descending).
type Point struct {
	U *mat.Dense
	S []float64
	V *mat.Dense
}

// Dense returns U·diag(S)·Vᵀ as a d1×d2 matrix.
func (p Point) Dense() *mat.Dense {
	d1, r := p.U.Dims()
	d2, _ := p.V.Dims()
	us := mat.NewDense(d1, r, nil)
	us.Copy(p.U)
	for j := 0; j < r; j++ {
		for i := 0; i < d1; i++ {
			us.Set(i, j, us.At(i, j)*p.S[j])
		}
	}
	out := mat.NewDense(d1, d2, nil)
	out.Mul(us, p.V.T())
	return out
}

// TangentProject returns P_T(a) = UUᵀa + aVVᵀ − UUᵀaVVᵀ, the orthogonal
// projection of the d1×d2 matrix a onto the tangent space of the rank-r
// manifold at the point with column space U and row space V.
func TangentProject(u, v *mat.Dense, a mat.Matrix) *mat.Dense {
	d1, d2 := a.Dims()
	return mat.NewDense(d1, d2, tangentOf(u, v).Project(mat.DenseCopyOf(a).RawMatrix().Data))
}

// tangentOf returns the tangent space with column space u (d1×r) and row
// space v (d2×r) as the kernels take it (row-major U and Vᵀ).
func tangentOf(u, v *mat.Dense) kernel.Tangent {
	d1, r := u.Dims()
	d2, _ := v.Dims()
	return kernel.Tangent{D1: d1, D2: d2, R: r, U: mat.DenseCopyOf(u).RawMatrix().Data, Vt: mat.DenseCopyOf(v.T()).RawMatrix().Data}
}

// RetractFull returns SVD_r(P_T(b)) by a full SVD of the projected d1×d2
// matrix: the reference implementation the fast retraction is tested
// against.
func RetractFull(be backend.Backend, u, v *mat.Dense, b mat.Matrix, r int) (Point, error) {
	pt := TangentProject(u, v, b)
	uu, s, vv, err := be.SVDTop(pt, r)
	if err != nil {
		return Point{}, fmt.Errorf("retraction by full SVD: %w", err)
	}
	return Point{U: uu, S: s, V: vv}, nil
}

// RetractFast returns SVD_r(P_T(b)) for the tangent space at (u, v) with two
// thin QRs and one 2r×2r SVD (Vandereycken 2013; Wei et al. 2016), at cost
// O(d1·d2·r + (d1+d2)·r²) instead of a d1×d2 SVD.
//
// With Q1 an orthonormal basis of span(U)⊥ ⊇ range((I−UUᵀ)bV) and Q2 one of
// span(V)⊥ ⊇ range((I−VVᵀ)bᵀU), P_T(b) = [U Q1]·K·[V Q2]ᵀ with
// K = [[UᵀbV, UᵀbQ2], [Q1ᵀbV, 0]], so the SVD of K gives that of P_T(b).
// Q1 (Q2) is taken from a QR of [U, bV] ([V, bᵀU]), which keeps [U Q1]
// orthonormal even when (I−UUᵀ)bV is rank deficient. It needs
// 2r ≤ min(d1, d2); otherwise it falls back to RetractFull.
func RetractFast(be backend.Backend, u, v *mat.Dense, b mat.Matrix, r int) (Point, error) {
	d1, d2 := b.Dims()
	if 2*r > d1 || 2*r > d2 {
		return RetractFull(be, u, v, b, r)
	}
	var bv, btu mat.Dense
	bv.Mul(b, v)      // d1×r
	btu.Mul(b.T(), u) // d2×r
	q1, err := complementBasis(be, u, &bv)
	if err != nil {
		return Point{}, err
	}
	q2, err := complementBasis(be, v, &btu)
	if err != nil {
		return Point{}, err
	}
	// K blocks.
	var c, top, bot mat.Dense
	c.Mul(u.T(), &bv)    // UᵀbV
	top.Mul(btu.T(), q2) // UᵀbQ2 = (bᵀU)ᵀQ2
	bot.Mul(q1.T(), &bv) // Q1ᵀbV
	k := mat.NewDense(2*r, 2*r, nil)
	k.Slice(0, r, 0, r).(*mat.Dense).Copy(&c)
	k.Slice(0, r, r, 2*r).(*mat.Dense).Copy(&top)
	k.Slice(r, 2*r, 0, r).(*mat.Dense).Copy(&bot)
	wk, s, zk, err := be.SVDTop(k, r)
	if err != nil {
		return Point{}, fmt.Errorf("retraction core SVD: %w", err)
	}
	uq := mat.NewDense(d1, 2*r, nil)
	uq.Slice(0, d1, 0, r).(*mat.Dense).Copy(u)
	uq.Slice(0, d1, r, 2*r).(*mat.Dense).Copy(q1)
	vq := mat.NewDense(d2, 2*r, nil)
	vq.Slice(0, d2, 0, r).(*mat.Dense).Copy(v)
	vq.Slice(0, d2, r, 2*r).(*mat.Dense).Copy(q2)
	nu := mat.NewDense(d1, r, nil)
	nu.Mul(uq, wk)
	nv := mat.NewDense(d2, r, nil)
	nv.Mul(vq, zk)
	return Point{U: nu, S: s, V: nv}, nil
}

// complementBasis returns r orthonormal columns orthogonal to u (d×r) whose
// span contains the component of y (d×r) orthogonal to u, from a thin QR of
// [u, y].
func complementBasis(be backend.Backend, u, y *mat.Dense) (*mat.Dense, error) {
	d, r := u.Dims()
	a := mat.NewDense(d, 2*r, nil)
	a.Slice(0, d, 0, r).(*mat.Dense).Copy(u)
	a.Slice(0, d, r, 2*r).(*mat.Dense).Copy(y)
	q, _, err := be.QR(a)
	if err != nil {
		return nil, fmt.Errorf("retraction QR: %w", err)
	}
	return mat.DenseCopyOf(q.Slice(0, d, r, 2*r)), nil
}
