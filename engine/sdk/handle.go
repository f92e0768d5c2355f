package sdk

import (
	"errors"
	"io"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/dataio"
	"github.com/dplr/dplr/engine/proto/dplrpb"
)

// OpenHandle opens the data set a host prepared: X memory-mapped read-only,
// no copy. The Closer unmaps it.
func OpenHandle(h *dplrpb.DatasetHandle) (*data.Dataset, io.Closer, error) {
	if h == nil {
		return nil, nil, errors.New("request carries no data set")
	}
	return dataio.Open(HandleFromProto(h))
}

// HandleToProto converts a prepared data set handle to its wire form.
func HandleToProto(h dataio.Handle) *dplrpb.DatasetHandle {
	return &dplrpb.DatasetHandle{
		Version: int32(h.Version), Kind: string(h.Kind), Hash: h.Hash, Name: h.Name,
		N: int64(h.N), P: int64(h.P), D1: int64(h.D1), D2: int64(h.D2),
		X: refToProto(&h.X), Y: refToProto(h.Y), UserStart: refToProto(h.UserStart),
		UserIds: refToProto(h.UserIDs), Labels: refToProto(h.Labels),
	}
}

// HandleFromProto converts a wire handle.
func HandleFromProto(h *dplrpb.DatasetHandle) dataio.Handle {
	out := dataio.Handle{
		Version: int(h.GetVersion()), Kind: data.Kind(h.GetKind()), Hash: h.GetHash(), Name: h.GetName(),
		N: int(h.GetN()), P: int(h.GetP()), D1: int(h.GetD1()), D2: int(h.GetD2()),
		Y: refFromProto(h.GetY()), UserStart: refFromProto(h.GetUserStart()),
		UserIDs: refFromProto(h.GetUserIds()), Labels: refFromProto(h.GetLabels()),
	}
	if x := refFromProto(h.GetX()); x != nil {
		out.X = *x
	}
	return out
}

func refToProto(r *dataio.FileRef) *dplrpb.FileRef {
	if r == nil {
		return nil
	}
	return &dplrpb.FileRef{Path: r.Path, Offset: r.Offset, Dtype: r.DType, Count: r.Count, Size: r.Size, Mtime: r.ModTime}
}

func refFromProto(r *dplrpb.FileRef) *dataio.FileRef {
	if r == nil {
		return nil
	}
	return &dataio.FileRef{Path: r.GetPath(), Offset: r.GetOffset(), DType: r.GetDtype(), Count: r.GetCount(), Size: r.GetSize(), ModTime: r.GetMtime()}
}
