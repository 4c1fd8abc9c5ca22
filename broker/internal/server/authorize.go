package server

import (
	"fmt"
	"net"
	"sync"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// authz is the broker's authorization: the authorizer deciding requests and the store its
// ACLs come from. It is nil when authorizer.class.name is unset, and then every request is
// allowed, as in Kafka without an authorizer.
type authz struct {
	*security.Authorizer
	store security.ACLStore
	mu    sync.Mutex // serialises reloads, so an older read never replaces a newer one
}

// openAuthorizer turns the authorizer on when configured and loads the ACLs; in cluster mode
// it also follows ZooKeeper's change notifications, so an ACL created through any broker is
// enforced here as soon as ZooKeeper delivers the event.
func (s *Server) openAuthorizer() error {
	conf := s.conf.Authorization()
	if !conf.Enabled {
		return nil
	}
	a := &authz{Authorizer: security.NewAuthorizer(conf.SuperUsers, conf.AllowIfNoACL)}
	switch {
	case s.zk != nil:
		a.store = s.zk
	default:
		store, ok := s.md.(security.ACLStore)
		if !ok {
			return fmt.Errorf("the metadata store %T keeps no ACLs", s.md)
		}
		a.store = store
	}
	s.authz = a
	if err := s.reloadACLs(); err != nil {
		return err
	}
	if s.zk != nil {
		if err := s.zk.WatchACLs(func() {
			if err := s.reloadACLs(); err != nil {
				s.log.Warn("reloading ACLs after a change notification", "err", err)
			}
		}); err != nil {
			return err
		}
	}
	s.log.Info("authorizer on", "acls", len(a.ACLs()), "super_users", conf.SuperUsers, config.AllowEveryoneIfNoACLFound, conf.AllowIfNoACL)
	return nil
}

// reloadACLs reads the stored ACLs into the authorizer.
func (s *Server) reloadACLs() error {
	a := s.authz
	a.mu.Lock()
	defer a.mu.Unlock()
	bs, err := a.store.ACLs()
	if err != nil {
		return fmt.Errorf("loading ACLs: %w", err)
	}
	ix := security.IndexACLs(bs)
	a.SetIndex(ix)       // DescribeAcls lists them
	s.images.SetACLs(ix) // requests decide with their image's
	return nil
}

// allowed is the one authorization check every handler calls: may the request's principal,
// from its host, do op on the resource typ/name? Always true without an authorizer. A denial
// is logged at info (principal, host, operation, resource, API), once per principal, operation
// and resource per spool.log.summary.interval.ms (loglines.go), as Kafka's
// kafka.authorizer.logger logs denials at INFO.
//
// It decides with the ACLs of the current metadata image; a handler that answers from an
// image it read (Metadata, DescribeConfigs) calls allowedIn with that image, so the ACLs it
// decides with and the metadata it answers with are of one version.
func (s *Server) allowed(req *request, op security.Operation, typ security.ResourceType, name string) bool {
	if s.authz == nil {
		return true
	}
	return s.allowedIn(s.images.Current(), req, op, typ, name)
}

// allowedIn is allowed with the ACLs of im.
func (s *Server) allowedIn(im *cluster.Image, req *request, op security.Operation, typ security.ResourceType, name string) bool {
	if s.authz == nil {
		return true
	}
	ok := s.authz.AuthorizeIn(im.ACLs(), req.principal, req.host, op, typ, name)
	if !ok {
		s.logDenied(req, op.String(), typ.String(), name)
	}
	return ok
}

// permits is allowed without the denial's log line, for checks that filter what a response
// lists (Metadata's topic list, ListGroups) or that a second check may still allow, as Kafka
// passes logIfDenied=false for them: they refuse nothing.
func (s *Server) permits(req *request, op security.Operation, typ security.ResourceType, name string) bool {
	return s.authz == nil || s.permitsIn(s.images.Current(), req, op, typ, name)
}

// permitsIn is permits with the ACLs of im.
func (s *Server) permitsIn(im *cluster.Image, req *request, op security.Operation, typ security.ResourceType, name string) bool {
	return s.authz == nil || s.authz.AuthorizeIn(im.ACLs(), req.principal, req.host, op, typ, name)
}

// allowedCluster checks op on the cluster resource.
func (s *Server) allowedCluster(req *request, op security.Operation) bool {
	return s.allowed(req, op, security.ResourceCluster, security.ClusterName)
}

// allowedAny checks op on at least one resource of the type (Kafka's authorizeByResourceType).
func (s *Server) allowedAny(req *request, op security.Operation, typ security.ResourceType) bool {
	if s.authz == nil {
		return true
	}
	return s.authz.AuthorizeAnyIn(s.images.Current().ACLs(), req.principal, req.host, op, typ)
}

// hostOf is the IP address ACL hosts are compared with (Kafka's InetAddress.getHostAddress).
func hostOf(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	if a == nil {
		return ""
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return h
}

// configAllowed is the check of DescribeConfigs (op DescribeConfigs) and the config-altering
// APIs (AlterConfigs): a topic needs op on the topic (else TOPIC_AUTHORIZATION_FAILED), a
// broker or broker logger op on the cluster (else CLUSTER_AUTHORIZATION_FAILED), as in Kafka.
func (s *Server) configAllowed(req *request, op security.Operation, resourceType int8, name string) error {
	return s.configAllowedIn(s.images.Current(), req, op, resourceType, name)
}

// configAllowedIn is configAllowed with the ACLs of im.
func (s *Server) configAllowedIn(im *cluster.Image, req *request, op security.Operation, resourceType int8, name string) error {
	if resourceType == resourceTopic {
		if !s.allowedIn(im, req, op, security.ResourceTopic, name) {
			return fmt.Errorf("%w: %s on topic %s", wire.ErrTopicAuthorizationFailed, op, name)
		}
		return nil
	}
	if !s.allowedIn(im, req, op, security.ResourceCluster, security.ClusterName) {
		return fmt.Errorf("%w: %s on the cluster", wire.ErrClusterAuthorizationFailed, op)
	}
	return nil
}

// aclAPIRefused is the check every ACL API starts with: SECURITY_DISABLED without an
// authorizer, CLUSTER_AUTHORIZATION_FAILED without op on the cluster; nil when it may go on.
func (s *Server) aclAPIRefused(req *request, op security.Operation) error {
	switch {
	case s.authz == nil:
		return fmt.Errorf("%w: no authorizer is configured (authorizer.class.name)", wire.ErrSecurityDisabled)
	case !s.allowedCluster(req, op):
		return fmt.Errorf("%w: %s needs %s on the cluster", wire.ErrClusterAuthorizationFailed, req.api.Name, op)
	}
	return nil
}
