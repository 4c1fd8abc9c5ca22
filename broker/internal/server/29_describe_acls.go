package server

// DescribeAcls (key 29), versions 0-3; flexible from 2.
//
// Lists the ACLs matching one filter, grouped by resource pattern, from the authorizer's
// current snapshot (which ZooKeeper's change notifications keep current in a cluster). v0
// has no pattern type: its filter matches LITERAL patterns only, as in Kafka.
// SECURITY_DISABLED when no authorizer is configured (authorizer.class.name);
// CLUSTER_AUTHORIZATION_FAILED without Describe on the cluster; INVALID_REQUEST for a filter
// with an UNKNOWN type, pattern type, operation or permission. Runs on the connection's
// reader goroutine.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDescribeAcls(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.DescribeAclsRequest)
	resp := &wire.DescribeAclsResponse{}
	resp.Default()
	fail := func(e *wire.Error, msg string) *pending {
		resp.ErrorCode, resp.ErrorMessage = e.Code, &msg
		return ready(reply{msg: resp})
	}
	if err := s.aclAPIRefused(req, security.OpDescribe); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errCode(err), errMessage(err)
		return ready(reply{msg: resp})
	}
	f := security.Filter{Type: security.ResourceType(r.ResourceTypeFilter), Name: r.ResourceNameFilter,
		PatternType: security.PatternType(r.PatternTypeFilter), Principal: r.PrincipalFilter, Host: r.HostFilter,
		Operation: security.Operation(r.Operation), Permission: security.Permission(r.PermissionType)}
	if err := f.Validate(); err != nil {
		return fail(wire.ErrInvalidRequest, err.Error())
	}
	// ACLs() is sorted by pattern, so each pattern's entries are adjacent.
	for _, b := range s.authz.ACLs() {
		if !f.Matches(b) {
			continue
		}
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != int8(b.Pattern.Type) || resp.Resources[n-1].ResourceName != b.Pattern.Name ||
			resp.Resources[n-1].PatternType != int8(b.Pattern.PatternType) {
			resp.Resources = append(resp.Resources, wire.DescribeAclsResponseResource{
				ResourceType: int8(b.Pattern.Type), ResourceName: b.Pattern.Name, PatternType: int8(b.Pattern.PatternType)})
			n++
		}
		res := &resp.Resources[n-1]
		res.Acls = append(res.Acls, wire.DescribeAclsResponseAclDescription{Principal: b.Entry.Principal, Host: b.Entry.Host,
			Operation: int8(b.Entry.Operation), PermissionType: int8(b.Entry.Permission)})
	}
	return ready(reply{msg: resp})
}
