package server

// FindCoordinator (key 10), versions 0-3; flexible from 3.
//
// On a single node this broker coordinates every group. v0 must be served: librdkafka enables
// LZ4 and its group consumer only when FindCoordinator v0 is advertised. Key type 1
// (transactions) gets INVALID_REQUEST until transactions exist.

import (
	"context"
	"errors"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleFindCoordinator(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.FindCoordinatorRequest)
	resp := &wire.FindCoordinatorResponse{}
	resp.Default()
	if r.KeyType != 0 {
		err := errors.New("transactions are not supported")
		resp.ErrorCode, resp.ErrorMessage = wire.ErrInvalidRequest.Code, errMessage(err)
		resp.NodeId, resp.Port = -1, -1
		return ready(reply{msg: resp})
	}
	b := s.md.Brokers()[0]
	resp.NodeId, resp.Host, resp.Port = b.NodeID, b.Host, b.Port
	return ready(reply{msg: resp})
}
