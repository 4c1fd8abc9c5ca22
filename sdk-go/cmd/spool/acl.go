package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	spool "github.com/spoolmq/spool/sdk-go"
)

// aclJSON is one ACL in `spool acl list --json` and `acl delete --json`.
type aclJSON struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
	ResourceType string `json:"resource_type"`
	PatternType  string `json:"pattern_type"`
	ResourceName string `json:"resource_name"`
}

func toACLJSON(a spool.ACL) aclJSON {
	return aclJSON{Principal: a.Principal, Host: a.Host, Operation: a.Operation.String(), Permission: a.Permission.String(),
		ResourceType: a.ResourceType.String(), PatternType: a.PatternType.String(), ResourceName: a.ResourceName}
}

// aclFlags are the flags of the acl subcommands, kafka-acls.sh's names.
type aclFlags struct {
	allow, deny, principal listFlag
	ops, hosts             listFlag
	topics, groups, txnIDs listFlag
	cluster                *bool
	pattern                *string
	asJSON                 *bool
}

func aclCmd(ctx context.Context, clientFor clientFunc, sub string, args []string, stdout io.Writer) error {
	fs := newFlags("acl " + sub)
	var f aclFlags
	if sub == "list" {
		fs.Var(&f.principal, "principal", "only ACLs of principal `P` (User:NAME); repeatable")
	} else {
		fs.Var(&f.allow, "allow-principal", "principal `P` (User:NAME, User:*) the ACLs allow; repeatable")
		fs.Var(&f.deny, "deny-principal", "principal `P` the ACLs deny; repeatable")
	}
	fs.Var(&f.ops, "operation", "operation `OP` (Read, Write, Create, Describe, All, ...); repeatable")
	fs.Var(&f.hosts, "host", "host `IP` the ACL applies to; repeatable (default * on create, any otherwise)")
	fs.Var(&f.topics, "topic", "topic `NAME` (or prefix, or *); repeatable")
	fs.Var(&f.groups, "group", "consumer group `NAME`; repeatable")
	fs.Var(&f.txnIDs, "transactional-id", "transactional id `ID`; repeatable")
	f.cluster = fs.Bool("cluster", false, "the cluster resource")
	defPattern := "literal"
	if sub != "create" {
		defPattern = "any"
	}
	f.pattern = fs.String("resource-pattern-type", defPattern, "`TYPE`: literal or prefixed; to filter also any or match")
	f.asJSON = new(bool)
	if sub != "create" {
		f.asJSON = fs.Bool("json", false, "print the ACLs as one JSON array (fields in the README)")
	}
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := fs.noArgs(); err != nil {
		return err
	}
	pattern, err := spool.ParseACLPatternType(*f.pattern)
	if err != nil || (sub == "create" && pattern != spool.ACLPatternLiteral && pattern != spool.ACLPatternPrefixed) {
		return fs.bad("acl %s: --resource-pattern-type %q: want literal or prefixed%s", sub, *f.pattern, map[bool]string{true: "", false: ", any or match"}[sub == "create"])
	}
	ops, err := parseEach(f.ops, spool.ParseACLOperation)
	if err != nil {
		return fs.bad("acl %s: --operation: %v", sub, err)
	}
	type resource struct {
		typ  spool.ACLResourceType
		name string
	}
	var resources []resource
	for _, r := range []struct {
		typ   spool.ACLResourceType
		names listFlag
	}{{spool.ACLResourceTopic, f.topics}, {spool.ACLResourceGroup, f.groups}, {spool.ACLResourceTransactionalID, f.txnIDs}} {
		for _, n := range r.names {
			if n == "" {
				return fs.bad("acl %s: empty resource name", sub)
			}
			resources = append(resources, resource{r.typ, n})
		}
	}
	if *f.cluster {
		resources = append(resources, resource{spool.ACLResourceCluster, spool.ACLClusterName})
	}
	type grant struct {
		principal string
		perm      spool.ACLPermission
	}
	var grants []grant
	for _, p := range f.allow {
		grants = append(grants, grant{p, spool.ACLPermissionAllow})
	}
	for _, p := range f.deny {
		grants = append(grants, grant{p, spool.ACLPermissionDeny})
	}
	for _, p := range slices.Concat(f.allow, f.deny, f.principal) {
		if t, name, ok := strings.Cut(p, ":"); !ok || t == "" || name == "" {
			return fs.bad("acl %s: principal %q: want TYPE:NAME, e.g. User:alice", sub, p)
		}
	}
	switch {
	case sub == "create" && len(grants) == 0:
		return fs.bad("acl create: give --allow-principal or --deny-principal")
	case sub == "create" && len(ops) == 0:
		return fs.bad("acl create: give --operation")
	case sub == "create" && len(resources) == 0:
		return fs.bad("acl create: give a resource: --topic, --group, --transactional-id or --cluster")
	case sub == "delete" && len(grants) == 0 && len(resources) == 0:
		return fs.bad("acl delete: give a resource or a principal (--allow-principal, --deny-principal); to delete every ACL say --topic '*' --resource-pattern-type any and so on")
	}
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	if sub == "create" {
		hosts := f.hosts
		if len(hosts) == 0 {
			hosts = listFlag{"*"}
		}
		var acls []spool.ACL
		for _, g := range grants {
			for _, op := range ops {
				for _, r := range resources {
					for _, h := range hosts {
						acls = append(acls, spool.ACL{ResourceType: r.typ, ResourceName: r.name, PatternType: pattern,
							Principal: g.principal, Host: h, Operation: op, Permission: g.perm})
					}
				}
			}
		}
		if err := ad.CreateACLs(ctx, acls...); err != nil {
			return err
		}
		for _, a := range acls {
			fmt.Fprintf(stdout, "created %s\n", a)
		}
		return nil
	}
	// list and delete: the cross product of the filter flags, each one matching all when absent.
	anyOf := func(xs listFlag) []string {
		if len(xs) == 0 {
			return []string{""}
		}
		return xs
	}
	if len(ops) == 0 {
		ops = []spool.ACLOperation{spool.ACLOpAny}
	}
	if len(resources) == 0 {
		resources = []resource{{spool.ACLResourceAny, ""}}
	}
	if len(grants) == 0 {
		for _, p := range anyOf(f.principal) {
			grants = append(grants, grant{p, spool.ACLPermissionAny})
		}
	}
	var filters []spool.ACLFilter
	for _, g := range grants {
		for _, op := range ops {
			for _, r := range resources {
				for _, h := range anyOf(f.hosts) {
					filters = append(filters, spool.ACLFilter{ResourceType: r.typ, ResourceName: r.name, PatternType: pattern,
						Principal: g.principal, Host: h, Operation: op, Permission: g.perm})
				}
			}
		}
	}
	var acls []spool.ACL
	if sub == "delete" {
		acls, err = ad.DeleteACLs(ctx, filters...)
	} else {
		seen := map[spool.ACL]bool{}
		for _, flt := range filters {
			got, err := ad.DescribeACLs(ctx, flt)
			if err != nil {
				return err
			}
			for _, a := range got {
				if !seen[a] {
					seen[a] = true
					acls = append(acls, a)
				}
			}
		}
	}
	if err != nil {
		return err
	}
	if *f.asJSON {
		out := []aclJSON{}
		for _, a := range acls {
			out = append(out, toACLJSON(a))
		}
		return writeJSON(stdout, out)
	}
	if sub == "delete" {
		for _, a := range acls {
			fmt.Fprintf(stdout, "deleted %s\n", a)
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tHOST\tOPERATION\tPERMISSION\tRESOURCE-TYPE\tPATTERN\tNAME")
	for _, a := range acls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Principal, a.Host, a.Operation, a.Permission, a.ResourceType, a.PatternType, a.ResourceName)
	}
	return tw.Flush()
}

// parseEach parses every value of a repeatable flag.
func parseEach[T any](vals listFlag, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, v := range vals {
		x, err := parse(v)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
