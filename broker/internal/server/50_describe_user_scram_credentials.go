package server

// DescribeUserScramCredentials (key 50), version 0; flexible.
//
// Lists, per user, the SCRAM mechanisms it has credentials for and their iteration counts
// (never salts or keys), from the broker's snapshot of the store (the embedded metadata's
// spool-scram.json, or ZooKeeper's /config/users). Users null or empty: every user with
// credentials. A user asked for twice gets DUPLICATE_RESOURCE, one without credentials
// RESOURCE_NOT_FOUND. With the authorizer on, Describe on the cluster is needed, else
// CLUSTER_AUTHORIZATION_FAILED for the whole request. Runs on the connection's reader
// goroutine.

import (
	"context"
	"maps"
	"slices"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDescribeUserScramCredentials(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.DescribeUserScramCredentialsRequest)
	resp := &wire.DescribeUserScramCredentialsResponse{}
	resp.Default()
	if !s.allowedCluster(req, security.OpDescribe) {
		msg := "DescribeUserScramCredentials needs Describe on the cluster"
		resp.ErrorCode, resp.ErrorMessage = wire.ErrClusterAuthorizationFailed.Code, &msg
		return ready(reply{msg: resp})
	}
	all := map[string]map[scram.Mechanism]security.ScramCredential{}
	if p := s.scram.creds.Load(); p != nil {
		all = *p
	}
	var users []string
	if len(r.Users) == 0 {
		users = slices.Sorted(maps.Keys(all))
	}
	count := map[string]int{}
	for _, u := range r.Users {
		count[u.Name]++
		users = append(users, u.Name)
	}
	for _, user := range users {
		res := wire.DescribeUserScramCredentialsResponseResult{User: user}
		creds := all[user]
		switch {
		case count[user] > 1:
			res.ErrorCode = wire.ErrDuplicateResource.Code
			res.ErrorMessage = errMessage(wire.ErrDuplicateResource)
		case len(creds) == 0:
			res.ErrorCode = wire.ErrResourceNotFound.Code
			msg := "Attempt to describe a user credential that does not exist: " + user
			res.ErrorMessage = &msg
		default:
			for _, m := range slices.Sorted(maps.Keys(creds)) {
				res.CredentialInfos = append(res.CredentialInfos, wire.DescribeUserScramCredentialsResponseCredentialInfo{Mechanism: int8(m), Iterations: int32(creds[m].Iterations)})
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return ready(reply{msg: resp})
}
