package security

import (
	"errors"
	"fmt"
	"strings"
)

// ACL vocabulary, numbered as Kafka numbers it on the wire (CreateAcls, DescribeAcls,
// DeleteAcls) and named as Kafka names it in ZooKeeper and in kafka-acls.sh's output.

// ResourceType is what an ACL protects.
type ResourceType int8

// Resource types (org.apache.kafka.common.resource.ResourceType).
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// ClusterName is the only name of the cluster resource, as in Kafka.
const ClusterName = "kafka-cluster"

// Wildcard is the literal resource name, principal and host that match every one.
const Wildcard = "*"

// WildcardPrincipal matches every principal of type User.
const WildcardPrincipal = "User:*"

var resourceTypeNames = map[ResourceType]string{
	ResourceTopic: "Topic", ResourceGroup: "Group", ResourceCluster: "Cluster",
	ResourceTransactionalID: "TransactionalId", ResourceDelegationToken: "DelegationToken", ResourceUser: "User",
}

func (t ResourceType) String() string {
	if n, ok := resourceTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("ResourceType(%d)", int8(t))
}

// ParseResourceType reads Kafka's name of a resource type ("Topic", case-insensitive).
func ParseResourceType(s string) (ResourceType, bool) {
	for t, n := range resourceTypeNames {
		if strings.EqualFold(n, s) {
			return t, true
		}
	}
	return ResourceUnknown, false
}

// PatternType says how an ACL's resource name matches resources.
type PatternType int8

// Pattern types (org.apache.kafka.common.resource.PatternType).
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters: any pattern type, names compared exactly
	PatternMatch    PatternType = 2 // filters: every pattern that would match the named resource
	PatternLiteral  PatternType = 3 // the name, or "*" for every resource
	PatternPrefixed PatternType = 4 // every resource whose name starts with the name
)

func (p PatternType) String() string {
	switch p {
	case PatternLiteral:
		return "LITERAL"
	case PatternPrefixed:
		return "PREFIXED"
	case PatternAny:
		return "ANY"
	case PatternMatch:
		return "MATCH"
	}
	return fmt.Sprintf("PatternType(%d)", int8(p))
}

// Operation is what a principal does to a resource.
type Operation int8

// Operations (org.apache.kafka.common.acl.AclOperation).
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

var operationNames = map[Operation]string{
	OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create", OpDelete: "Delete", OpAlter: "Alter",
	OpDescribe: "Describe", OpClusterAction: "ClusterAction", OpDescribeConfigs: "DescribeConfigs",
	OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite", OpCreateTokens: "CreateTokens",
	OpDescribeTokens: "DescribeTokens",
}

func (o Operation) String() string {
	if n, ok := operationNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Operation(%d)", int8(o))
}

// ParseOperation reads Kafka's name of an operation ("Read", "DescribeConfigs"; also
// "DESCRIBE_CONFIGS"), case-insensitive.
func ParseOperation(s string) (Operation, bool) {
	s = strings.ReplaceAll(s, "_", "")
	for o, n := range operationNames {
		if strings.EqualFold(n, s) {
			return o, true
		}
	}
	return OpUnknown, false
}

// Permission is ALLOW or DENY.
type Permission int8

// Permission types (org.apache.kafka.common.acl.AclPermissionType).
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	Deny              Permission = 2
	Allow             Permission = 3
)

func (p Permission) String() string {
	switch p {
	case Deny:
		return "Deny"
	case Allow:
		return "Allow"
	}
	return fmt.Sprintf("Permission(%d)", int8(p))
}

// ParsePermission reads "Allow" or "Deny", case-insensitive.
func ParsePermission(s string) (Permission, bool) {
	switch strings.ToLower(s) {
	case "allow":
		return Allow, true
	case "deny":
		return Deny, true
	}
	return PermissionUnknown, false
}

// Pattern is a resource pattern: the resources one ACL applies to.
type Pattern struct {
	Type        ResourceType
	Name        string
	PatternType PatternType
}

func (p Pattern) String() string {
	return fmt.Sprintf("%s:%s:%s", p.Type, p.PatternType, p.Name)
}

// Entry is one access control entry of a pattern.
type Entry struct {
	Principal  string // "User:alice", or "User:*"
	Host       string // an IP address, or "*"
	Operation  Operation
	Permission Permission
}

// Binding is one ACL: a pattern and an entry.
type Binding struct {
	Pattern Pattern
	Entry   Entry
}

func (b Binding) String() string {
	return fmt.Sprintf("(pattern=%s, principal=%s, host=%s, operation=%s, permission=%s)",
		b.Pattern, b.Entry.Principal, b.Entry.Host, b.Entry.Operation, b.Entry.Permission)
}

// ErrInvalidACL is the cause of every ACL CreateAcls refuses.
var ErrInvalidACL = errors.New("invalid ACL")

// Validate checks a binding to be created, with Kafka's rules: concrete types (no ANY or
// UNKNOWN), LITERAL or PREFIXED, a "Type:name" principal, a non-empty name, and the cluster
// resource named kafka-cluster.
func (b Binding) Validate() error {
	p, e := b.Pattern, b.Entry
	switch {
	case resourceTypeNames[p.Type] == "":
		return fmt.Errorf("%w: resource type %d", ErrInvalidACL, p.Type)
	case p.PatternType != PatternLiteral && p.PatternType != PatternPrefixed:
		return fmt.Errorf("%w: pattern type %s (want LITERAL or PREFIXED)", ErrInvalidACL, p.PatternType)
	case p.Name == "":
		return fmt.Errorf("%w: empty resource name", ErrInvalidACL)
	case p.Type == ResourceCluster && p.Name != ClusterName:
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalidACL, ClusterName)
	case operationNames[e.Operation] == "":
		return fmt.Errorf("%w: operation %d", ErrInvalidACL, e.Operation)
	case e.Permission != Allow && e.Permission != Deny:
		return fmt.Errorf("%w: permission type %d", ErrInvalidACL, e.Permission)
	case !validPrincipal(e.Principal):
		return fmt.Errorf("%w: principal %q (want Type:name, e.g. User:alice)", ErrInvalidACL, e.Principal)
	case e.Host == "":
		return fmt.Errorf("%w: empty host (use * for any host)", ErrInvalidACL)
	}
	return nil
}

func validPrincipal(p string) bool {
	i := strings.IndexByte(p, ':')
	return i > 0 && i < len(p)-1
}

// Filter selects bindings (DescribeAcls, DeleteAcls); nil strings match anything.
type Filter struct {
	Type        ResourceType
	Name        *string
	PatternType PatternType
	Principal   *string
	Host        *string
	Operation   Operation
	Permission  Permission
}

// Validate refuses filters Kafka refuses: an UNKNOWN anywhere.
func (f Filter) Validate() error {
	switch {
	case f.Type == ResourceUnknown || (f.Type != ResourceAny && resourceTypeNames[f.Type] == ""):
		return fmt.Errorf("%w: filter resource type %d", ErrInvalidACL, f.Type)
	case f.PatternType < PatternAny || f.PatternType > PatternPrefixed:
		return fmt.Errorf("%w: filter pattern type %d", ErrInvalidACL, f.PatternType)
	case f.Operation == OpUnknown || (f.Operation != OpAny && operationNames[f.Operation] == ""):
		return fmt.Errorf("%w: filter operation %d", ErrInvalidACL, f.Operation)
	case f.Permission < PermissionAny || f.Permission > Allow:
		return fmt.Errorf("%w: filter permission type %d", ErrInvalidACL, f.Permission)
	}
	return nil
}

// Matches tells whether the filter selects b, as Kafka's AclBindingFilter does.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b.Pattern) && f.matchesEntry(b.Entry)
}

func (f Filter) matchesPattern(p Pattern) bool {
	if f.Type != ResourceAny && f.Type != p.Type {
		return false
	}
	switch f.PatternType {
	case PatternAny:
		return f.Name == nil || *f.Name == p.Name
	case PatternMatch:
		if f.Name == nil {
			return true
		}
		switch p.PatternType {
		case PatternLiteral:
			return p.Name == *f.Name || p.Name == Wildcard
		case PatternPrefixed:
			return strings.HasPrefix(*f.Name, p.Name)
		}
		return false
	default:
		return f.PatternType == p.PatternType && (f.Name == nil || *f.Name == p.Name)
	}
}

func (f Filter) matchesEntry(e Entry) bool {
	return (f.Principal == nil || *f.Principal == e.Principal) &&
		(f.Host == nil || *f.Host == e.Host) &&
		(f.Operation == OpAny || f.Operation == e.Operation) &&
		(f.Permission == PermissionAny || f.Permission == e.Permission)
}
