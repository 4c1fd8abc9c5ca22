package server

// DeleteAcls (key 31), versions 0-3; flexible from 2.
//
// Removes the ACL bindings matching each filter from the store (conditional writes per
// resource pattern; in a cluster with a change notification every broker follows) and
// answers, per filter, the bindings it removed; then reloads this broker's authorizer. v0
// filters match LITERAL patterns only. SECURITY_DISABLED when no authorizer is configured;
// CLUSTER_AUTHORIZATION_FAILED without Alter on the cluster; INVALID_REQUEST for a filter
// with an UNKNOWN field; UNKNOWN_SERVER_ERROR when the store fails. Runs on the connection's
// reader goroutine.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDeleteAcls(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.DeleteAclsRequest)
	resp := &wire.DeleteAclsResponse{}
	resp.Default()
	resp.FilterResults = make([]wire.DeleteAclsResponseFilterResult, len(r.Filters))
	fail := func(i int, e *wire.Error, msg string) {
		resp.FilterResults[i].ErrorCode, resp.FilterResults[i].ErrorMessage = e.Code, &msg
	}
	if err := s.aclAPIRefused(req, security.OpAlter); err != nil {
		for i := range resp.FilterResults {
			resp.FilterResults[i].ErrorCode, resp.FilterResults[i].ErrorMessage = errCode(err), errMessage(err)
		}
		return ready(reply{msg: resp})
	}
	changed := false
	for i, wf := range r.Filters {
		f := security.Filter{Type: security.ResourceType(wf.ResourceTypeFilter), Name: wf.ResourceNameFilter,
			PatternType: security.PatternType(wf.PatternTypeFilter), Principal: wf.PrincipalFilter, Host: wf.HostFilter,
			Operation: security.Operation(wf.Operation), Permission: security.Permission(wf.PermissionType)}
		if err := f.Validate(); err != nil {
			fail(i, wire.ErrInvalidRequest, err.Error())
			continue
		}
		all, err := s.authz.store.ACLs()
		if err != nil {
			fail(i, wire.ErrUnknownServerError, err.Error())
			continue
		}
		// The patterns with a matching binding; each is rewritten once, and what is removed
		// is decided on the entries read in that write.
		var patterns []security.Pattern
		seen := map[security.Pattern]bool{}
		for _, b := range all {
			if f.Matches(b) && !seen[b.Pattern] {
				seen[b.Pattern] = true
				patterns = append(patterns, b.Pattern)
			}
		}
		removed := make([][]security.Entry, len(patterns))
		updates := make([]security.ACLUpdate, len(patterns))
		for j, p := range patterns {
			updates[j] = security.ACLUpdate{Pattern: p, Update: func(cur []security.Entry) []security.Entry {
				removed[j] = removed[j][:0]
				var keep []security.Entry
				for _, e := range cur {
					if f.Matches(security.Binding{Pattern: p, Entry: e}) {
						removed[j] = append(removed[j], e)
					} else {
						keep = append(keep, e)
					}
				}
				return keep
			}}
		}
		if err := s.authz.store.UpdateACLs(updates); err != nil {
			s.log.Warn("DeleteAcls", "err", err)
			fail(i, wire.ErrUnknownServerError, err.Error())
			continue
		}
		for j, p := range patterns {
			for _, e := range removed[j] {
				changed = true
				s.log.Info("ACL deleted", "acl", security.Binding{Pattern: p, Entry: e}, "by", req.principal)
				resp.FilterResults[i].MatchingAcls = append(resp.FilterResults[i].MatchingAcls, wire.DeleteAclsResponseMatchingAcl{
					ResourceType: int8(p.Type), ResourceName: p.Name, PatternType: int8(p.PatternType),
					Principal: e.Principal, Host: e.Host, Operation: int8(e.Operation), PermissionType: int8(e.Permission)})
			}
		}
	}
	if changed {
		if err := s.reloadACLs(); err != nil {
			s.log.Warn("reloading ACLs after DeleteAcls", "err", err)
		}
	}
	return ready(reply{msg: resp})
}
