package sdk

import (
	"errors"
	"io"

	"github.com/dplr/dplr/engine/data"
	"github.com/dplr/dplr/engine/proto/dplrpb"
)

// OpenHandle opens the data set a host prepared (memory-mapped, read-only).
func OpenHandle(h *dplrpb.DatasetHandle) (*data.Dataset, io.Closer, error) {
	return nil, nil, errors.New("data handles: wiring to engine/dataio in progress")
}
