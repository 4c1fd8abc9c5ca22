package server

// ApiVersions (key 18), versions 0-4; flexible from 3.
//
// Advertises every API in the handler table at the range of the protocol spec, except the
// inter-broker ones (WriteTxnMarkers). The response
// header is always v0, even for flexible versions, so a client that does not yet know our
// versions can parse it. A request at a version above ours is answered in the v0 format with
// UNSUPPORTED_VERSION (35) and our ranges (KIP-511); conn.dispatch does that before decoding.
// v3+ carries the client's software name and version, which we log at debug level.

import (
	"context"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleApiVersions(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.ApiVersionsRequest)
	if req.version >= 3 {
		s.log.Debug("client connected", "client_id", req.clientID(), "software", r.ClientSoftwareName, "software_version", r.ClientSoftwareVersion)
		s.clientSoftware(r.ClientSoftwareName, r.ClientSoftwareVersion) // the info summary's tally
	}
	return ready(reply{msg: s.apiVersionsResponse(0)})
}

// apiVersionsResponse lists the served APIs.
func (s *Server) apiVersionsResponse(code int16) *wire.ApiVersionsResponse {
	resp := &wire.ApiVersionsResponse{}
	resp.Default()
	resp.ErrorCode = code
	for _, api := range wire.APIs {
		if handlers[api.Key] == nil || interBrokerOnly[api.Key] {
			continue
		}
		resp.ApiKeys = append(resp.ApiKeys, wire.ApiVersionsResponseApiVersion{ApiKey: api.Key, MinVersion: api.MinVersion, MaxVersion: api.MaxVersion})
	}
	return resp
}
