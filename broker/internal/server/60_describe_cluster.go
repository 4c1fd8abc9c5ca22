package server

// DescribeCluster (key 60), versions 0-1; flexible from 0.
//
// The cluster id, the controller and every broker. v1 adds an endpoint type: brokers (1) are
// described; asking for controllers (2) gets UNSUPPORTED_ENDPOINT_TYPE, as a ZooKeeper-era
// broker answers. Authorized operations are not computed (no ACLs). The answer comes from one
// metadata image (cluster.Images.Current, read once), so the controller and the brokers are of
// one version. No authorization: Kafka requires none either (Describe on the cluster only
// gates the authorized operations, which are not computed).

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
	im := s.images.Current() // the one read of the metadata for this request
	resp.ClusterId = im.ClusterID
	resp.ControllerId = im.Controller
	for _, b := range im.Brokers() {
		if host, port, ok := b.Addr(req.listener); ok {
			resp.Brokers = append(resp.Brokers, wire.DescribeClusterResponseBroker{BrokerId: b.NodeID, Host: host, Port: port, Rack: b.Rack})
		}
	}
	return ready(reply{msg: resp})
}
