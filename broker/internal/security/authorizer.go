package security

import (
	"slices"
	"strings"
	"sync/atomic"
)

// Authorizer decides requests with Kafka's AclAuthorizer semantics:
//
//   - a super user (super.users) may do everything;
//   - the ACLs that apply to a resource are the LITERAL ones naming it, the LITERAL ones
//     named "*", and the PREFIXED ones whose name starts the resource's name;
//   - with none, the answer is allow.everyone.if.no.acl.found (default false);
//   - else a DENY matching the principal (or User:*), the host (or *) and the operation (or
//     All) refuses, and otherwise an ALLOW matching them permits. Describe is implied by
//     Read, Write, Delete and Alter; DescribeConfigs by AlterConfigs.
//
// Decisions read an immutable index of the ACLs: the one SetACLs swapped in (Authorize), or
// one the caller holds (AuthorizeIn: the ACLs of the metadata image its request reads), so
// the per-request check takes no lock and allocates nothing.
type Authorizer struct {
	super       map[string]bool
	allowIfNone bool
	snap        atomic.Pointer[ACLIndex]
}

// ACLIndex is a set of ACLs indexed for lookups (IndexACLs); immutable, so shared by every
// reader without a lock.
type ACLIndex struct {
	bindings []Binding                           // all, in a stable order
	literal  map[ResourceType]map[string][]Entry // LITERAL patterns, "*" included
	prefixed map[ResourceType]map[string][]Entry // PREFIXED patterns
	lengths  map[ResourceType][]int              // the distinct prefix lengths per type
	byType   map[ResourceType][]Binding          // for AuthorizeAny
}

// NewAuthorizer returns an authorizer with no ACLs. superUsers are principals ("User:admin").
func NewAuthorizer(superUsers []string, allowIfNoACL bool) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, allowIfNone: allowIfNoACL}
	for _, u := range superUsers {
		a.super[u] = true
	}
	a.SetACLs(nil)
	return a
}

// SetACLs replaces the ACLs the authorizer decides with.
func (a *Authorizer) SetACLs(bindings []Binding) { a.SetIndex(IndexACLs(bindings)) }

// SetIndex is SetACLs with ACLs already indexed (nil: none).
func (a *Authorizer) SetIndex(ix *ACLIndex) {
	if ix == nil {
		ix = emptyIndex
	}
	a.snap.Store(ix)
}

// IndexACLs indexes bindings (copied; the caller keeps its slice).
func IndexACLs(bindings []Binding) *ACLIndex {
	s := &ACLIndex{
		bindings: slices.Clone(bindings),
		literal:  map[ResourceType]map[string][]Entry{},
		prefixed: map[ResourceType]map[string][]Entry{},
		lengths:  map[ResourceType][]int{},
		byType:   map[ResourceType][]Binding{},
	}
	slices.SortFunc(s.bindings, compareBindings)
	for _, b := range s.bindings {
		p := b.Pattern
		idx := s.literal
		if p.PatternType == PatternPrefixed {
			idx = s.prefixed
			if !slices.Contains(s.lengths[p.Type], len(p.Name)) {
				s.lengths[p.Type] = append(s.lengths[p.Type], len(p.Name))
			}
		}
		if idx[p.Type] == nil {
			idx[p.Type] = map[string][]Entry{}
		}
		idx[p.Type][p.Name] = append(idx[p.Type][p.Name], b.Entry)
		s.byType[p.Type] = append(s.byType[p.Type], b)
	}
	return s
}

// Bindings are the index's ACLs, sorted by resource type, pattern type, name, principal,
// host, operation and permission. Shared: do not modify. A nil index has none.
func (s *ACLIndex) Bindings() []Binding {
	if s == nil {
		return nil
	}
	return s.bindings
}

// ACLs returns every ACL of SetACLs, sorted as ACLIndex.Bindings.
func (a *Authorizer) ACLs() []Binding { return a.snap.Load().bindings }

// IsSuperUser tells whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.super[principal] }

// Authorize tells whether principal, connected from host, may do op on the resource of type
// typ named name.
func (a *Authorizer) Authorize(principal, host string, op Operation, typ ResourceType, name string) bool {
	return a.AuthorizeIn(a.snap.Load(), principal, host, op, typ, name)
}

// AuthorizeIn is Authorize with the ACLs of s instead of those of SetACLs (a nil s has none).
func (a *Authorizer) AuthorizeIn(s *ACLIndex, principal, host string, op Operation, typ ResourceType, name string) bool {
	if a.super[principal] {
		return true
	}
	if s == nil {
		s = emptyIndex
	}
	lit := s.literal[typ]
	exact, wild := lit[name], lit[Wildcard]
	found := len(exact)+len(wild) > 0
	if !found {
		for _, n := range s.lengths[typ] {
			if n <= len(name) && len(s.prefixed[typ][name[:n]]) > 0 {
				found = true
				break
			}
		}
	}
	if !found {
		return a.allowIfNone
	}
	// DENY wins: look for one first in every matching group.
	if anyMatch(exact, principal, host, op, Deny) || anyMatch(wild, principal, host, op, Deny) {
		return false
	}
	for _, n := range s.lengths[typ] {
		if n <= len(name) && anyMatch(s.prefixed[typ][name[:n]], principal, host, op, Deny) {
			return false
		}
	}
	if anyMatch(exact, principal, host, op, Allow) || anyMatch(wild, principal, host, op, Allow) {
		return true
	}
	for _, n := range s.lengths[typ] {
		if n <= len(name) && anyMatch(s.prefixed[typ][name[:n]], principal, host, op, Allow) {
			return true
		}
	}
	return false
}

// anyMatch tells whether one of entries of permission perm applies to principal, host and op.
// An ALLOW of an operation that implies op applies too.
func anyMatch(entries []Entry, principal, host string, op Operation, perm Permission) bool {
	for i := range entries {
		e := &entries[i]
		if e.Permission != perm ||
			(e.Principal != principal && e.Principal != WildcardPrincipal) ||
			(e.Host != host && e.Host != Wildcard) {
			continue
		}
		if e.Operation == op || e.Operation == OpAll || (perm == Allow && implies(e.Operation, op)) {
			return true
		}
	}
	return false
}

// implies tells whether being allowed granted lets one do op as well (Kafka's implicit
// Describe and DescribeConfigs).
func implies(granted, op Operation) bool {
	switch op {
	case OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// AuthorizeAny tells whether principal may do op on at least one resource of type typ, as
// Kafka's authorizeByResourceType (used by InitProducerId without a transactional id, which
// needs IdempotentWrite on the cluster or Write on some topic): a super user may; a DENY of
// the LITERAL "*" refuses; otherwise an ALLOW of a LITERAL name or a prefix permits unless a
// DENY of the same name, or of a prefix of it, takes it back. With no ACL of that type at
// all, allow.everyone.if.no.acl.found decides.
func (a *Authorizer) AuthorizeAny(principal, host string, op Operation, typ ResourceType) bool {
	return a.AuthorizeAnyIn(a.snap.Load(), principal, host, op, typ)
}

// emptyIndex is the index of no ACLs, for a nil *ACLIndex.
var emptyIndex = IndexACLs(nil)

// AuthorizeAnyIn is AuthorizeAny with the ACLs of s (a nil s has none).
func (a *Authorizer) AuthorizeAnyIn(s *ACLIndex, principal, host string, op Operation, typ ResourceType) bool {
	if a.super[principal] {
		return true
	}
	if s == nil {
		s = emptyIndex
	}
	bs := s.byType[typ]
	if len(bs) == 0 {
		return a.allowIfNone
	}
	applies := func(e Entry, perm Permission) bool {
		return anyMatch([]Entry{e}, principal, host, op, perm)
	}
	var denyLiteral, denyPrefix []string
	for _, b := range bs {
		if !applies(b.Entry, Deny) {
			continue
		}
		if b.Pattern.PatternType == PatternLiteral {
			if b.Pattern.Name == Wildcard {
				return false
			}
			denyLiteral = append(denyLiteral, b.Pattern.Name)
		} else {
			denyPrefix = append(denyPrefix, b.Pattern.Name)
		}
	}
	for _, b := range bs {
		if !applies(b.Entry, Allow) {
			continue
		}
		name := b.Pattern.Name
		if b.Pattern.PatternType == PatternLiteral && slices.Contains(denyLiteral, name) {
			continue
		}
		if slices.ContainsFunc(denyPrefix, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		return true
	}
	return false
}

func compareBindings(x, y Binding) int {
	switch {
	case x.Pattern.Type != y.Pattern.Type:
		return int(x.Pattern.Type) - int(y.Pattern.Type)
	case x.Pattern.PatternType != y.Pattern.PatternType:
		return int(x.Pattern.PatternType) - int(y.Pattern.PatternType)
	case x.Pattern.Name != y.Pattern.Name:
		return strings.Compare(x.Pattern.Name, y.Pattern.Name)
	case x.Entry.Principal != y.Entry.Principal:
		return strings.Compare(x.Entry.Principal, y.Entry.Principal)
	case x.Entry.Host != y.Entry.Host:
		return strings.Compare(x.Entry.Host, y.Entry.Host)
	case x.Entry.Operation != y.Entry.Operation:
		return int(x.Entry.Operation) - int(y.Entry.Operation)
	}
	return int(x.Entry.Permission) - int(y.Entry.Permission)
}

// ACLStore persists ACLs: the embedded metadata store on a single node, ZooKeeper in a
// cluster (Kafka's /kafka-acl znodes).
type ACLStore interface {
	// ACLs reads every stored ACL.
	ACLs() ([]Binding, error)
	// UpdateACLs applies updates, each atomically with respect to other updates of its
	// pattern (on any broker); the embedded store writes them all at once.
	UpdateACLs(updates []ACLUpdate) error
}

// ACLUpdate replaces the entries of one pattern by what Update returns from the current ones.
type ACLUpdate struct {
	Pattern Pattern
	Update  func(cur []Entry) []Entry
}
