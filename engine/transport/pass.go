package transport

import (
	"errors"
	"fmt"
	"math"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/transport/internal/dplrpb"
)

// MaxPassParams bounds the parameters of one pass request and the scalars
// of one reply (a pass kind has a handful).
const MaxPassParams = 64

// MaxPassArrays bounds the arrays (inputs or outputs) of one pass.
const MaxPassArrays = 64

// splitArrays cuts arrays into groups of chunks, each group holding at
// most MaxChunk values: one group per message. An empty array travels as
// one chunk without data. There is always at least one group (possibly
// empty), for the message that carries the rest of the request or reply.
func splitArrays(arrays []data.Array) [][]*dplrpb.ArrayChunk {
	var groups [][]*dplrpb.ArrayChunk
	var cur []*dplrpb.ArrayChunk
	room := MaxChunk
	flush := func() {
		groups = append(groups, cur)
		cur, room = nil, MaxChunk
	}
	for _, a := range arrays {
		if len(a.Data) == 0 {
			cur = append(cur, &dplrpb.ArrayChunk{Name: a.Name, Rows: int64(a.Rows), Cols: int64(a.Cols)})
			continue
		}
		for off := 0; off < len(a.Data); {
			if room == 0 {
				flush()
			}
			n := min(room, len(a.Data)-off)
			cur = append(cur, &dplrpb.ArrayChunk{Name: a.Name, Rows: int64(a.Rows), Cols: int64(a.Cols), Offset: int64(off), Data: a.Data[off : off+n]})
			off += n
			room -= n
		}
	}
	flush()
	return groups
}

// PassRequestMessages splits the pass request req, numbered id, into the
// messages that carry it (see dplr.proto's PassRequest): the first holds
// the kind and parameters, the last has Done set.
func PassRequestMessages(id uint64, req data.PassRequest) []PassPart {
	groups := splitArrays(req.Inputs)
	out := make([]PassPart, len(groups))
	for i, g := range groups {
		out[i] = PassPart{ID: id, m: &dplrpb.PassRequest{Id: id, Inputs: g}}
	}
	out[0].Kind, out[0].m.Kind, out[0].m.Params = req.Kind, req.Kind, req.Params
	out[len(out)-1].m.Done = true
	return out
}

// passReplyMessages splits the result of the pass numbered id (or, with
// res nil, the error text errText) into the messages that carry it (see
// dplr.proto's PassReply).
func passReplyMessages(id uint64, res *data.PassResult, errText string) []*dplrpb.PassReply {
	if res == nil {
		if errText == "" {
			errText = "the pass returned no result"
		}
		return []*dplrpb.PassReply{{Id: id, Error: errText, Done: true}}
	}
	groups := splitArrays(res.Outputs)
	out := make([]*dplrpb.PassReply, len(groups))
	for i, g := range groups {
		out[i] = &dplrpb.PassReply{Id: id, Outputs: g}
	}
	out[0].Records, out[0].Scalars = res.Records, res.Scalars
	out[len(out)-1].Done = true
	return out
}

// arrayAssembler reassembles chunked arrays in order, allocating no more
// than limit values in all (a message cannot make it allocate more).
type arrayAssembler struct {
	arrays []data.Array
	limit  int64
	total  int64
}

func (a *arrayAssembler) add(c *dplrpb.ArrayChunk) error {
	if c == nil {
		return errors.New("empty array chunk")
	}
	n := len(a.arrays)
	if n > 0 {
		cur := &a.arrays[n-1]
		if len(cur.Data) < cur.Rows*cur.Cols {
			// The current array is incomplete: this chunk must continue it.
			if c.GetName() != cur.Name || c.GetRows() != int64(cur.Rows) || c.GetCols() != int64(cur.Cols) {
				return fmt.Errorf("array %q is incomplete (%d of %d values) when array %q begins", cur.Name, len(cur.Data), cur.Rows*cur.Cols, c.GetName())
			}
			if c.GetOffset() != int64(len(cur.Data)) || int64(len(c.GetData())) > int64(cur.Rows*cur.Cols-len(cur.Data)) {
				return fmt.Errorf("array %q: chunk of %d values at offset %d out of order or beyond its %d values", cur.Name, len(c.GetData()), c.GetOffset(), cur.Rows*cur.Cols)
			}
			cur.Data = append(cur.Data, c.GetData()...)
			return nil
		}
	}
	if n >= MaxPassArrays {
		return fmt.Errorf("more than %d arrays", MaxPassArrays)
	}
	rows, cols := c.GetRows(), c.GetCols()
	if c.GetName() == "" || rows < 0 || cols < 0 || rows > math.MaxInt32 || cols > math.MaxInt32 {
		return fmt.Errorf("array %q with shape %d×%d", c.GetName(), rows, cols)
	}
	size := rows * cols
	if size > a.limit-a.total {
		return fmt.Errorf("array %q of %d×%d values: more than the %d values a pass may carry", c.GetName(), rows, cols, a.limit)
	}
	if c.GetOffset() != 0 || int64(len(c.GetData())) > size {
		return fmt.Errorf("array %q begins with a chunk of %d values at offset %d", c.GetName(), len(c.GetData()), c.GetOffset())
	}
	a.total += size
	d := make([]float64, 0, size)
	a.arrays = append(a.arrays, data.Array{Name: c.GetName(), Rows: int(rows), Cols: int(cols), Data: append(d, c.GetData()...)})
	return nil
}

// complete checks that the last array is complete.
func (a *arrayAssembler) complete() error {
	if n := len(a.arrays); n > 0 {
		cur := a.arrays[n-1]
		if len(cur.Data) != cur.Rows*cur.Cols {
			return fmt.Errorf("array %q incomplete (%d of %d values)", cur.Name, len(cur.Data), cur.Rows*cur.Cols)
		}
	}
	return nil
}

// checkScalars bounds a parameter or scalar map and checks it is finite.
func checkScalars(what string, m map[string]float64) error {
	if len(m) > MaxPassParams {
		return fmt.Errorf("%d %s, more than %d", len(m), what, MaxPassParams)
	}
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s %q = %v is not finite", what, k, v)
		}
	}
	return nil
}

// PassRequestAssembler reassembles a pass request split over messages
// (host side), allocating at most its limit of input values.
type PassRequestAssembler struct {
	id      uint64
	started bool
	req     data.PassRequest
	arrays  arrayAssembler
}

// NewPassRequestAssembler returns an assembler for the request numbered id
// whose inputs may hold at most maxValues values in all.
func NewPassRequestAssembler(id uint64, maxValues int64) *PassRequestAssembler {
	return &PassRequestAssembler{id: id, arrays: arrayAssembler{limit: maxValues}}
}

// Add takes the next message; it returns the request once its last
// message arrived (nil before). Parameters travel in the first message
// only; a message of another id, a parameter that is not finite or
// chunks out of order are errors.
func (r *PassRequestAssembler) Add(p PassPart) (*data.PassRequest, error) { return r.add(p.m) }

func (r *PassRequestAssembler) add(m *dplrpb.PassRequest) (*data.PassRequest, error) {
	if m.GetId() != r.id {
		return nil, fmt.Errorf("pass request numbered %d, want %d", m.GetId(), r.id)
	}
	if !r.started {
		r.started = true
		if m.GetKind() == "" {
			return nil, fmt.Errorf("pass request %d names no kind", r.id)
		}
		if err := checkScalars("parameters", m.GetParams()); err != nil {
			return nil, fmt.Errorf("pass request %d (%s): %w", r.id, m.GetKind(), err)
		}
		r.req.Kind, r.req.Params = m.GetKind(), m.GetParams()
		if r.req.Params == nil {
			r.req.Params = map[string]float64{}
		}
	} else if m.GetKind() != "" || len(m.GetParams()) > 0 {
		return nil, fmt.Errorf("pass request %d repeats its kind or parameters in a later message", r.id)
	}
	for _, c := range m.GetInputs() {
		if err := r.arrays.add(c); err != nil {
			return nil, fmt.Errorf("pass request %d (%s): input %w", r.id, r.req.Kind, err)
		}
	}
	if !m.GetDone() {
		return nil, nil
	}
	if err := r.arrays.complete(); err != nil {
		return nil, fmt.Errorf("pass request %d (%s): input %w", r.id, r.req.Kind, err)
	}
	r.req.Inputs = r.arrays.arrays
	return &r.req, nil
}

// passReplyAssembler reassembles a pass reply split over messages (plugin
// side).
type passReplyAssembler struct {
	id      uint64
	started bool
	res     data.PassResult
	errText string
	arrays  arrayAssembler
}

// newPassReplyAssembler returns an assembler for the reply to pass id
// whose outputs may hold at most maxValues values.
func newPassReplyAssembler(id uint64, maxValues int64) *passReplyAssembler {
	return &passReplyAssembler{id: id, arrays: arrayAssembler{limit: maxValues}}
}

// Add takes the next message; once the last arrived it returns the result
// (done true), or the host's error text when the host refused or failed
// the pass.
func (r *passReplyAssembler) Add(m *dplrpb.PassReply) (res *data.PassResult, errText string, done bool, err error) {
	if m.GetId() != r.id {
		return nil, "", false, fmt.Errorf("reply to pass %d, want %d", m.GetId(), r.id)
	}
	if !r.started {
		r.started = true
		if err := checkScalars("scalars", m.GetScalars()); err != nil {
			return nil, "", false, fmt.Errorf("reply to pass %d: %w", r.id, err)
		}
		r.res.Records, r.res.Scalars, r.errText = m.GetRecords(), m.GetScalars(), m.GetError()
	}
	for _, c := range m.GetOutputs() {
		if err := r.arrays.add(c); err != nil {
			return nil, "", false, fmt.Errorf("reply to pass %d: output %w", r.id, err)
		}
	}
	if !m.GetDone() {
		return nil, "", false, nil
	}
	if r.errText != "" {
		return nil, r.errText, true, nil
	}
	if err := r.arrays.complete(); err != nil {
		return nil, "", false, fmt.Errorf("reply to pass %d: output %w", r.id, err)
	}
	r.res.Outputs = r.arrays.arrays
	return &r.res, "", true, nil
}

// remoteToProto is the wire form of a remote data set's public shape.
func remoteToProto(r *data.Remote) *dplrpb.RemoteShape {
	if r == nil {
		return nil
	}
	return &dplrpb.RemoteShape{N: int64(r.N), P: int64(r.P), D1: int64(r.D1), D2: int64(r.D2), Users: int64(r.Users)}
}

// remoteFromProto converts a wire remote shape (its Passer is nil).
func remoteFromProto(r *dplrpb.RemoteShape) *data.Remote {
	if r == nil {
		return nil
	}
	return &data.Remote{N: int(r.GetN()), P: int(r.GetP()), D1: int(r.GetD1()), D2: int(r.GetD2()), Users: int(r.GetUsers())}
}
