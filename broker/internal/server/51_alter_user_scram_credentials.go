package server

// AlterUserScramCredentials (key 51), version 0; flexible.
//
// Deletes and upserts users' SCRAM credentials. An upsertion carries the salt, the salted
// password and the iteration count; the broker keeps only the salt, StoredKey and ServerKey
// derived from them. Results are one per user named (in order of first mention), with
// Kafka's rules: a user deleted and upserted, or named twice for one mechanism, gets
// DUPLICATE_RESOURCE; an unknown mechanism UNSUPPORTED_SASL_MECHANISM; an empty user name, an
// empty salt or salted password, or iterations outside 4096-16384 UNACCEPTABLE_CREDENTIAL;
// deleting a credential that does not exist RESOURCE_NOT_FOUND; a user with any failing
// alteration is left unchanged. Credentials are written to the store (the embedded
// metadata's spool-scram.json, or ZooKeeper's /config/users/<user> with a /config/changes
// notification every broker follows), then this broker's snapshot is reloaded so the next
// authentication sees them. With the authorizer on, Alter on the cluster is needed, else
// CLUSTER_AUTHORIZATION_FAILED for every user. Runs on the connection's reader goroutine.

import (
	"context"
	"fmt"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleAlterUserScramCredentials(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.AlterUserScramCredentialsRequest)
	resp := &wire.AlterUserScramCredentialsResponse{}
	resp.Default()
	type change struct {
		del      bool
		mech     scram.Mechanism
		iter     int
		salt     []byte
		salted   []byte
		mechName int8
	}
	var order []string
	changes := map[string][]change{}
	add := func(user string, c change) {
		if _, ok := changes[user]; !ok {
			order = append(order, user)
		}
		changes[user] = append(changes[user], c)
	}
	for _, d := range r.Deletions {
		add(d.Name, change{del: true, mech: scram.Mechanism(d.Mechanism), mechName: d.Mechanism})
	}
	for _, u := range r.Upsertions {
		add(u.Name, change{mech: scram.Mechanism(u.Mechanism), mechName: u.Mechanism, iter: int(u.Iterations), salt: u.Salt, salted: u.SaltedPassword})
	}
	allowed := s.allowedCluster(req, security.OpAlter)
	changed := false
	for _, user := range order {
		res := wire.AlterUserScramCredentialsResponseResult{User: user}
		err := func() error {
			if !allowed {
				return fmt.Errorf("%w: AlterUserScramCredentials needs Alter on the cluster", wire.ErrClusterAuthorizationFailed)
			}
			cs := changes[user]
			seen := map[scram.Mechanism]bool{}
			for _, c := range cs {
				switch {
				case user == "":
					return fmt.Errorf("%w: empty user name", wire.ErrUnacceptableCredential)
				case c.mech != scram.SHA256 && c.mech != scram.SHA512:
					return fmt.Errorf("%w: unknown SCRAM mechanism %d", wire.ErrUnsupportedSaslMechanism, c.mechName)
				case seen[c.mech]:
					return fmt.Errorf("%w: user %s has more than one alteration of %s", wire.ErrDuplicateResource, user, c.mech)
				case !c.del && (c.iter < scram.MinIterations || c.iter > scram.MaxIterations):
					return fmt.Errorf("%w: %d iterations is outside %d-%d", wire.ErrUnacceptableCredential, c.iter, scram.MinIterations, scram.MaxIterations)
				case !c.del && (len(c.salt) == 0 || len(c.salted) == 0):
					return fmt.Errorf("%w: empty salt or salted password", wire.ErrUnacceptableCredential)
				}
				seen[c.mech] = true
			}
			var missing error
			err := s.scram.store.UpdateScramCredentials(user, func(cur map[scram.Mechanism]security.ScramCredential) map[scram.Mechanism]security.ScramCredential {
				next := map[scram.Mechanism]security.ScramCredential{}
				for m, c := range cur {
					next[m] = c
				}
				missing = nil
				for _, c := range cs {
					if c.del {
						if _, ok := next[c.mech]; !ok {
							missing = fmt.Errorf("%w: user %s has no %s credential", wire.ErrResourceNotFound, user, c.mech)
							return cur
						}
						delete(next, c.mech)
						continue
					}
					next[c.mech] = security.CredentialFromSalted(c.mech, c.salt, c.salted, c.iter)
				}
				return next
			})
			if err != nil {
				s.log.Warn("AlterUserScramCredentials", "user", user, "err", err)
				return fmt.Errorf("%w: %v", wire.ErrUnknownServerError, err)
			}
			if missing != nil {
				return missing
			}
			changed = true
			s.log.Info("SCRAM credentials altered", "user", user, "by", req.principal)
			return nil
		}()
		res.ErrorCode, res.ErrorMessage = errCode(err), errMessage(err)
		resp.Results = append(resp.Results, res)
	}
	if changed {
		if err := s.reloadScram(); err != nil {
			s.log.Warn("reloading SCRAM credentials", "err", err)
		}
	}
	return ready(reply{msg: resp})
}
