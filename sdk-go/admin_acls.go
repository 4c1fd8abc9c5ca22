package spool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spoolmq/spool/protocol-spec/scram"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// ACLs (CreateAcls, DescribeAcls, DeleteAcls) and SCRAM users (DescribeUserScramCredentials,
// AlterUserScramCredentials), with Kafka's vocabulary, numbered as on the wire and named as
// kafka-acls.sh names it.

// ACLResourceType is what an ACL protects.
type ACLResourceType int8

// Resource types (Kafka's ResourceType).
const (
	ACLResourceAny             ACLResourceType = 1 // filters only
	ACLResourceTopic           ACLResourceType = 2
	ACLResourceGroup           ACLResourceType = 3
	ACLResourceCluster         ACLResourceType = 4
	ACLResourceTransactionalID ACLResourceType = 5
)

// ACLClusterName is the name of the one cluster resource.
const ACLClusterName = "kafka-cluster"

// ACLPatternType says how an ACL's resource name matches.
type ACLPatternType int8

// Pattern types (Kafka's PatternType).
const (
	ACLPatternAny      ACLPatternType = 1 // filters: any pattern, names compared exactly
	ACLPatternMatch    ACLPatternType = 2 // filters: every ACL that applies to the named resource
	ACLPatternLiteral  ACLPatternType = 3 // the name itself, or "*" for all
	ACLPatternPrefixed ACLPatternType = 4 // every name starting with it
)

// ACLOperation is what an ACL allows or denies.
type ACLOperation int8

// Operations (Kafka's AclOperation).
const (
	ACLOpAny             ACLOperation = 1 // filters only
	ACLOpAll             ACLOperation = 2
	ACLOpRead            ACLOperation = 3
	ACLOpWrite           ACLOperation = 4
	ACLOpCreate          ACLOperation = 5
	ACLOpDelete          ACLOperation = 6
	ACLOpAlter           ACLOperation = 7
	ACLOpDescribe        ACLOperation = 8
	ACLOpClusterAction   ACLOperation = 9
	ACLOpDescribeConfigs ACLOperation = 10
	ACLOpAlterConfigs    ACLOperation = 11
	ACLOpIdempotentWrite ACLOperation = 12
)

// ACLPermission is ALLOW or DENY.
type ACLPermission int8

// Permissions (Kafka's AclPermissionType).
const (
	ACLPermissionAny   ACLPermission = 1 // filters only
	ACLPermissionDeny  ACLPermission = 2
	ACLPermissionAllow ACLPermission = 3
)

var (
	resourceTypeNames = map[ACLResourceType]string{ACLResourceAny: "Any", ACLResourceTopic: "Topic", ACLResourceGroup: "Group",
		ACLResourceCluster: "Cluster", ACLResourceTransactionalID: "TransactionalId"}
	patternTypeNames = map[ACLPatternType]string{ACLPatternAny: "ANY", ACLPatternMatch: "MATCH", ACLPatternLiteral: "LITERAL", ACLPatternPrefixed: "PREFIXED"}
	operationNames   = map[ACLOperation]string{ACLOpAny: "Any", ACLOpAll: "All", ACLOpRead: "Read", ACLOpWrite: "Write", ACLOpCreate: "Create",
		ACLOpDelete: "Delete", ACLOpAlter: "Alter", ACLOpDescribe: "Describe", ACLOpClusterAction: "ClusterAction",
		ACLOpDescribeConfigs: "DescribeConfigs", ACLOpAlterConfigs: "AlterConfigs", ACLOpIdempotentWrite: "IdempotentWrite"}
	permissionNames = map[ACLPermission]string{ACLPermissionAny: "ANY", ACLPermissionDeny: "DENY", ACLPermissionAllow: "ALLOW"}
)

func nameOf[K ~int8](names map[K]string, k K, kind string) string {
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("%s(%d)", kind, int8(k))
}

// parseName reads a name of names, case-insensitive, ignoring '_' and '-' (so DESCRIBE_CONFIGS
// and transactional-id are read too).
func parseName[K ~int8](names map[K]string, s, kind string) (K, error) {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	for k, n := range names {
		if norm(n) == norm(s) {
			return k, nil
		}
	}
	var all []string
	for k := K(0); k < 20; k++ {
		if n, ok := names[k]; ok {
			all = append(all, n)
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", kind, s, strings.Join(all, ", "))
}

func (t ACLResourceType) String() string { return nameOf(resourceTypeNames, t, "ResourceType") }
func (p ACLPatternType) String() string  { return nameOf(patternTypeNames, p, "PatternType") }
func (o ACLOperation) String() string    { return nameOf(operationNames, o, "Operation") }
func (p ACLPermission) String() string   { return nameOf(permissionNames, p, "Permission") }

// ParseACLResourceType reads Topic, Group, Cluster, TransactionalId or Any.
func ParseACLResourceType(s string) (ACLResourceType, error) {
	return parseName(resourceTypeNames, s, "resource type")
}

// ParseACLPatternType reads LITERAL, PREFIXED, ANY or MATCH.
func ParseACLPatternType(s string) (ACLPatternType, error) {
	return parseName(patternTypeNames, s, "pattern type")
}

// ParseACLOperation reads an operation's name (Read, DescribeConfigs, ...; also DESCRIBE_CONFIGS).
func ParseACLOperation(s string) (ACLOperation, error) {
	return parseName(operationNames, s, "operation")
}

// ParseACLPermission reads ALLOW, DENY or ANY.
func ParseACLPermission(s string) (ACLPermission, error) {
	return parseName(permissionNames, s, "permission")
}

// ACL is one access control entry bound to a resource pattern.
type ACL struct {
	ResourceType ACLResourceType
	ResourceName string
	PatternType  ACLPatternType
	Principal    string // User:name, or User:* for everyone
	Host         string // an IP address, or * for every host
	Operation    ACLOperation
	Permission   ACLPermission
}

func (a ACL) String() string {
	return fmt.Sprintf("%s %s %s from %s on %s:%s:%s", a.Principal, a.Permission, a.Operation, a.Host, a.ResourceType, a.PatternType, a.ResourceName)
}

// ACLFilter selects ACLs: the ANY values of the enumerations and empty strings match all.
type ACLFilter struct {
	ResourceType ACLResourceType
	ResourceName string
	PatternType  ACLPatternType
	Principal    string
	Host         string
	Operation    ACLOperation
	Permission   ACLPermission
}

// AllACLs is the filter matching every ACL.
var AllACLs = ACLFilter{ResourceType: ACLResourceAny, PatternType: ACLPatternAny, Operation: ACLOpAny, Permission: ACLPermissionAny}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// anyBroker sends req to any broker with retries; check reads resp's error codes.
func (a *Admin) anyBroker(ctx context.Context, req, resp wire.Message, check func() error) error {
	return a.cl.withRetries(ctx, func(ctx context.Context) error {
		if err := a.cl.Request(ctx, req, resp); err != nil {
			return err
		}
		return check()
	})
}

// CreateACLs creates acls (kafka-acls.sh --add). The error joins the refusal of each ACL
// that was not created, naming it.
func (a *Admin) CreateACLs(ctx context.Context, acls ...ACL) error {
	req := &wire.CreateAclsRequest{}
	req.Default()
	for _, x := range acls {
		req.Creations = append(req.Creations, wire.CreateAclsRequestAclCreation{ResourceType: int8(x.ResourceType), ResourceName: x.ResourceName,
			ResourcePatternType: int8(x.PatternType), Principal: x.Principal, Host: x.Host, Operation: int8(x.Operation), PermissionType: int8(x.Permission)})
	}
	resp := &wire.CreateAclsResponse{}
	err := a.anyBroker(ctx, req, resp, func() error {
		if len(resp.Results) != len(acls) {
			return fmt.Errorf("%d results for %d ACLs", len(resp.Results), len(acls))
		}
		var errs []error
		for i, r := range resp.Results {
			if err := wire.ErrorForCode(r.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", acls[i], withMessage(finalError{err}, r.ErrorMessage)))
			}
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return fmt.Errorf("spool: creating ACLs: %w", err)
	}
	return nil
}

// DescribeACLs lists the ACLs f matches (kafka-acls.sh --list).
func (a *Admin) DescribeACLs(ctx context.Context, f ACLFilter) ([]ACL, error) {
	req := &wire.DescribeAclsRequest{}
	req.Default()
	req.ResourceTypeFilter, req.ResourceNameFilter, req.PatternTypeFilter = int8(f.ResourceType), optString(f.ResourceName), int8(f.PatternType)
	req.PrincipalFilter, req.HostFilter, req.Operation, req.PermissionType = optString(f.Principal), optString(f.Host), int8(f.Operation), int8(f.Permission)
	resp := &wire.DescribeAclsResponse{}
	err := a.anyBroker(ctx, req, resp, func() error { return withMessage(wire.ErrorForCode(resp.ErrorCode), resp.ErrorMessage) })
	if err != nil {
		return nil, fmt.Errorf("spool: describing ACLs: %w", err)
	}
	var out []ACL
	for _, r := range resp.Resources {
		for _, d := range r.Acls {
			out = append(out, ACL{ResourceType: ACLResourceType(r.ResourceType), ResourceName: r.ResourceName, PatternType: ACLPatternType(r.PatternType),
				Principal: d.Principal, Host: d.Host, Operation: ACLOperation(d.Operation), Permission: ACLPermission(d.PermissionType)})
		}
	}
	return out, nil
}

// DeleteACLs deletes the ACLs the filters match (kafka-acls.sh --remove) and returns them.
func (a *Admin) DeleteACLs(ctx context.Context, filters ...ACLFilter) ([]ACL, error) {
	req := &wire.DeleteAclsRequest{}
	req.Default()
	for _, f := range filters {
		req.Filters = append(req.Filters, wire.DeleteAclsRequestFilter{ResourceTypeFilter: int8(f.ResourceType), ResourceNameFilter: optString(f.ResourceName),
			PatternTypeFilter: int8(f.PatternType), PrincipalFilter: optString(f.Principal), HostFilter: optString(f.Host),
			Operation: int8(f.Operation), PermissionType: int8(f.Permission)})
	}
	resp := &wire.DeleteAclsResponse{}
	var out []ACL
	err := a.anyBroker(ctx, req, resp, func() error {
		out = out[:0]
		var errs []error
		for _, r := range resp.FilterResults {
			if err := wire.ErrorForCode(r.ErrorCode); err != nil {
				errs = append(errs, withMessage(finalError{err}, r.ErrorMessage))
				continue
			}
			for _, m := range r.MatchingAcls {
				if err := wire.ErrorForCode(m.ErrorCode); err != nil {
					errs = append(errs, withMessage(finalError{err}, m.ErrorMessage))
					continue
				}
				out = append(out, ACL{ResourceType: ACLResourceType(m.ResourceType), ResourceName: m.ResourceName, PatternType: ACLPatternType(m.PatternType),
					Principal: m.Principal, Host: m.Host, Operation: ACLOperation(m.Operation), Permission: ACLPermission(m.PermissionType)})
			}
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return out, fmt.Errorf("spool: deleting ACLs: %w", err)
	}
	return out, nil
}

// ScramUser is a user's SCRAM credentials as the broker describes them (never a secret).
type ScramUser struct {
	User        string
	Credentials []ScramCredentialInfo
	Err         error // RESOURCE_NOT_FOUND for a user without credentials
}

// ScramCredentialInfo is one mechanism's credential of a user.
type ScramCredentialInfo struct {
	Mechanism  ScramMechanism
	Iterations int32
}

// DescribeUserScram describes the SCRAM credentials of users (all users with credentials
// when none is named).
func (a *Admin) DescribeUserScram(ctx context.Context, users ...string) ([]ScramUser, error) {
	req := &wire.DescribeUserScramCredentialsRequest{}
	req.Default()
	if len(users) > 0 {
		req.Users = []wire.DescribeUserScramCredentialsRequestUserName{}
		for _, u := range users {
			req.Users = append(req.Users, wire.DescribeUserScramCredentialsRequestUserName{Name: u})
		}
	}
	resp := &wire.DescribeUserScramCredentialsResponse{}
	err := a.anyBroker(ctx, req, resp, func() error { return withMessage(wire.ErrorForCode(resp.ErrorCode), resp.ErrorMessage) })
	if err != nil {
		return nil, fmt.Errorf("spool: describing SCRAM users: %w", err)
	}
	var out []ScramUser
	for _, r := range resp.Results {
		u := ScramUser{User: r.User, Err: withMessage(wire.ErrorForCode(r.ErrorCode), r.ErrorMessage)}
		for _, c := range r.CredentialInfos {
			u.Credentials = append(u.Credentials, ScramCredentialInfo{Mechanism: ScramMechanism(c.Mechanism), Iterations: c.Iterations})
		}
		out = append(out, u)
	}
	return out, nil
}

// UpsertUserScram creates or replaces user's credential for mechanism m with password,
// salted here with a random salt over iterations (4096 to 16384): the password never leaves
// the client.
func (a *Admin) UpsertUserScram(ctx context.Context, user string, m ScramMechanism, iterations int, password string) error {
	salt, salted, err := scram.NewSaltedPassword(m, password, iterations)
	if err != nil {
		return fmt.Errorf("spool: SCRAM credential of %q: %w", user, err)
	}
	req := &wire.AlterUserScramCredentialsRequest{}
	req.Default()
	req.Upsertions = []wire.AlterUserScramCredentialsRequestScramCredentialUpsertion{{Name: user, Mechanism: int8(m), Iterations: int32(iterations), Salt: salt, SaltedPassword: salted}}
	return a.alterScram(ctx, req, "setting the "+m.String()+" credential of "+user)
}

// DeleteUserScram deletes user's credential for mechanism m.
func (a *Admin) DeleteUserScram(ctx context.Context, user string, m ScramMechanism) error {
	req := &wire.AlterUserScramCredentialsRequest{}
	req.Default()
	req.Deletions = []wire.AlterUserScramCredentialsRequestScramCredentialDeletion{{Name: user, Mechanism: int8(m)}}
	return a.alterScram(ctx, req, "deleting the "+m.String()+" credential of "+user)
}

func (a *Admin) alterScram(ctx context.Context, req *wire.AlterUserScramCredentialsRequest, what string) error {
	resp := &wire.AlterUserScramCredentialsResponse{}
	err := a.controllerRequest(ctx, req, resp, func(bool) error {
		for _, r := range resp.Results {
			if err := wire.ErrorForCode(r.ErrorCode); err != nil {
				return withMessage(err, r.ErrorMessage)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spool: %s: %w", what, err)
	}
	return nil
}
