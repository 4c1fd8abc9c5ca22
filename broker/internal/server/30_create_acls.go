package server

// CreateAcls (key 30), versions 0-3; flexible from 2.
//
// Adds ACL bindings to the store (the embedded metadata's ACL file, or Kafka's /kafka-acl
// znodes with a change notification every broker follows), then reloads this broker's
// authorizer so the answer is visible at once. One result per creation, in request order;
// an ACL that exists already is a success. v0 creations are LITERAL. SECURITY_DISABLED when
// no authorizer is configured; CLUSTER_AUTHORIZATION_FAILED without Alter on the cluster;
// INVALID_REQUEST for an ACL Kafka refuses (ANY/UNKNOWN types, a pattern other than LITERAL
// or PREFIXED, a principal not "Type:name", a cluster resource not named kafka-cluster);
// UNKNOWN_SERVER_ERROR when the store fails. Runs on the connection's reader goroutine
// (ZooKeeper round trips included: an admin request).

import (
	"context"
	"slices"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleCreateAcls(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.CreateAclsRequest)
	resp := &wire.CreateAclsResponse{}
	resp.Default()
	resp.Results = make([]wire.CreateAclsResponseAclCreationResult, len(r.Creations))
	fail := func(i int, e *wire.Error, msg string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = e.Code, &msg
	}
	if err := s.aclAPIRefused(req, security.OpAlter); err != nil {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errCode(err), errMessage(err)
		}
		return ready(reply{msg: resp})
	}
	// The valid creations, grouped by pattern: one store update per pattern.
	var valid []int
	var updates []security.ACLUpdate
	adding := map[security.Pattern][]security.Entry{}
	for i, c := range r.Creations {
		b := security.Binding{
			Pattern: security.Pattern{Type: security.ResourceType(c.ResourceType), Name: c.ResourceName, PatternType: security.PatternType(c.ResourcePatternType)},
			Entry:   security.Entry{Principal: c.Principal, Host: c.Host, Operation: security.Operation(c.Operation), Permission: security.Permission(c.PermissionType)},
		}
		if err := b.Validate(); err != nil {
			fail(i, wire.ErrInvalidRequest, err.Error())
			continue
		}
		valid = append(valid, i)
		if _, ok := adding[b.Pattern]; !ok {
			p := b.Pattern
			updates = append(updates, security.ACLUpdate{Pattern: p, Update: func(cur []security.Entry) []security.Entry {
				for _, e := range adding[p] {
					if !slices.Contains(cur, e) {
						cur = append(cur, e)
					}
				}
				return cur
			}})
		}
		adding[b.Pattern] = append(adding[b.Pattern], b.Entry)
	}
	if len(updates) == 0 {
		return ready(reply{msg: resp})
	}
	if err := s.authz.store.UpdateACLs(updates); err != nil {
		s.log.Warn("CreateAcls", "err", err)
		for _, i := range valid {
			fail(i, wire.ErrUnknownServerError, err.Error())
		}
	} else {
		s.log.Info("ACLs created", "count", len(valid), "patterns", len(updates), "by", req.principal)
	}
	if err := s.reloadACLs(); err != nil {
		s.log.Warn("reloading ACLs after CreateAcls", "err", err)
	}
	return ready(reply{msg: resp})
}
