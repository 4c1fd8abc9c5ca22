package server

// DescribeCluster (key 60), versions 0-1; flexible from 0.
//
// The cluster id, the controller and every broker. v1 adds an endpoint type: brokers (1) are
// described; asking for controllers (2) gets UNSUPPORTED_ENDPOINT_TYPE, as a ZooKeeper-era
// broker answers. Authorized operations are not computed (no ACLs).

import (
	"context"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDescribeCluster(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.DescribeClusterRequest)
	resp := &wire.DescribeClusterResponse{}
	resp.Default()
	resp.EndpointType = r.EndpointType
	if req.version >= 1 && r.EndpointType != 1 {
		resp.ErrorCode = wire.ErrUnsupportedEndpointType.Code
		return ready(reply{msg: resp})
	}
	resp.ClusterId = s.md.ClusterID()
	resp.ControllerId = s.md.ControllerID()
	for _, b := range s.md.Brokers() {
		if host, port, ok := b.Addr(req.listener); ok {
			resp.Brokers = append(resp.Brokers, wire.DescribeClusterResponseBroker{BrokerId: b.NodeID, Host: host, Port: port, Rack: b.Rack})
		}
	}
	return ready(reply{msg: resp})
}
