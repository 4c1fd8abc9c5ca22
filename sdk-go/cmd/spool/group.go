package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// partitionsFlag is a comma-separated partition list, e.g. "0,2".
type partitionsFlag []int32

func (p *partitionsFlag) String() string { return "" }
func (p *partitionsFlag) Set(s string) error {
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("want partition numbers like 0,1,2, got %q", s)
		}
		*p = append(*p, int32(n))
	}
	return nil
}

// seekTarget is the parsed --to of group seek: a special position, an offset or a time.
type seekTarget struct {
	exact  bool
	offset int64 // the offset, when exact
	at     int64 // otherwise what ListOffsets asks for: OffsetEarliest, OffsetLatest or Unix ms
	isTime bool  // at is a time
}

// parseSeekTarget reads earliest, latest, an offset (a plain number), or a time: RFC 3339 or
// Unix milliseconds after "@" (as kcat writes them), so offsets and times cannot be confused.
func parseSeekTarget(s string) (seekTarget, error) {
	switch s {
	case "earliest":
		return seekTarget{at: spool.OffsetEarliest}, nil
	case "latest":
		return seekTarget{at: spool.OffsetLatest}, nil
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n < 0 {
			return seekTarget{}, fmt.Errorf("--to %q: want @ followed by Unix milliseconds", s)
		}
		return seekTarget{at: n, isTime: true}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return seekTarget{}, fmt.Errorf("--to %q: an offset cannot be negative", s)
		}
		return seekTarget{offset: n, exact: true}, nil
	}
	if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return seekTarget{at: ts.UnixMilli(), isTime: true}, nil
	}
	return seekTarget{}, fmt.Errorf("--to %q: want earliest, latest, an offset, an RFC 3339 time or @UNIX_MS", s)
}

func groupCmd(ctx context.Context, clientFor clientFunc, sub string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("group " + sub)
	var topic, to *string
	var create *bool
	var parts partitionsFlag
	asJSON := new(bool)
	switch sub {
	case "list", "describe":
		asJSON = fs.Bool("json", false, "print one JSON document (fields in the README) instead of a table")
	case "seek":
		topic = fs.String("topic", "", "the topic whose offsets move (required)")
		to = fs.String("to", "", "where to: earliest, latest, OFFSET, RFC3339-TIME or @UNIX_MS (required)")
		create = fs.Bool("create", false, "start the group at these offsets when it does not exist")
		fs.Var(&parts, "partitions", "only these partitions, e.g. `0,2` (default: every partition of the topic)")
	case "delete-offsets":
		topic = fs.String("topic", "", "the topic whose offsets are deleted (required)")
		fs.Var(&parts, "partitions", "only these partitions, e.g. `0,2` (default: every committed partition of the topic)")
	}
	if err := fs.parse(args); err != nil {
		return err
	}
	groups := fs.Args()
	switch {
	case sub == "list" && len(groups) > 0:
		return fs.noArgs()
	case sub == "delete" && len(groups) == 0:
		return fs.bad("group delete: missing group name")
	case sub != "list" && sub != "delete" && len(groups) != 1:
		return fs.bad("group %s: want exactly one group name", sub)
	case topic != nil && *topic == "":
		return fs.bad("group %s: --topic is required", sub)
	}
	var target seekTarget
	if sub == "seek" {
		if *to == "" {
			return fs.bad("group seek: --to is required")
		}
		var err error
		if target, err = parseSeekTarget(*to); err != nil {
			return fs.bad("group seek: %v", err)
		}
	}
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	switch sub {
	case "list":
		return groupList(ctx, ad, *asJSON, stdout)
	case "describe":
		return groupDescribe(ctx, ad, groups[0], *asJSON, stdout)
	case "delete":
		return groupDelete(ctx, ad, groups, stdout, stderr)
	case "seek":
		return groupSeek(ctx, ad, groups[0], *topic, parts, target, *create, stdout)
	default:
		return groupDeleteOffsets(ctx, ad, groups[0], *topic, parts, stdout)
	}
}

func groupList(ctx context.Context, ad *spool.Admin, asJSON bool, stdout io.Writer) error {
	// Groups of the brokers that answered are printed even when others failed; the failures
	// then make the exit status non-zero.
	gs, err := ad.ListGroups(ctx)
	if len(gs) == 0 && err != nil {
		return err
	}
	rows := []groupJSON{}
	for _, g := range gs {
		members, lag := groupTotals(ctx, ad, g.GroupID)
		rows = append(rows, groupJSON{Group: g.GroupID, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator,
			Members: members, Lag: lag})
	}
	if asJSON {
		if jerr := writeJSON(stdout, rows); jerr != nil {
			return jerr
		}
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR\tMEMBERS\tLAG")
	for _, g := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", g.Group, orDash(g.State), orDash(g.ProtocolType), g.Coordinator,
			numberOrDash(g.Members), numberOrDash(g.Lag))
	}
	if ferr := tw.Flush(); ferr != nil {
		return ferr
	}
	return err
}

// numberOrDash prints a count that may be unknown (nil).
func numberOrDash[T int | int64](n *T) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(int64(*n), 10)
}

// groupTotals are a group's member count and total lag over its committed partitions, nil
// when they cannot be read (the group went away, or a partition's end is unknown).
func groupTotals(ctx context.Context, ad *spool.Admin, group string) (members *int, lag *int64) {
	d, err := describeGroup(ctx, ad, group)
	if err != nil {
		return nil, nil
	}
	n := len(d.Members)
	rows, err := ad.GroupLag(ctx, group)
	if err != nil {
		return &n, nil
	}
	var total int64
	for _, r := range rows {
		if r.Committed < 0 {
			continue // assigned, nothing committed: no lag to count
		}
		if r.Lag < 0 {
			return &n, nil
		}
		total += r.Lag
	}
	return &n, &total
}

// describeGroup describes one group, turning "does not exist" into a plain error.
func describeGroup(ctx context.Context, ad *spool.Admin, group string) (spool.GroupDescription, error) {
	ds, err := ad.DescribeGroups(ctx, group)
	if err != nil {
		return spool.GroupDescription{}, err
	}
	if errors.Is(ds[0].Err, wire.ErrGroupIdNotFound) {
		return ds[0], fmt.Errorf("group %q does not exist: %w", group, ds[0].Err)
	}
	if ds[0].Err != nil {
		return ds[0], fmt.Errorf("group %q: %w", group, ds[0].Err)
	}
	return ds[0], nil
}

func groupDescribe(ctx context.Context, ad *spool.Admin, group string, asJSON bool, stdout io.Writer) error {
	d, err := describeGroup(ctx, ad, group)
	if err != nil {
		return err
	}
	lag, err := ad.GroupLag(ctx, group)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, groupDescriptionJSON(d, lag))
	}
	fmt.Fprintf(stdout, "group %s state %s protocol-type %s protocol %s members %d\n\n", d.GroupID, d.State, orDash(d.ProtocolType), orDash(d.Protocol), len(d.Members))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if len(d.Members) > 0 {
		fmt.Fprintln(tw, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range d.Members {
			inst := "-"
			if m.InstanceID != nil {
				inst = *m.InstanceID
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, inst, m.ClientID, m.ClientHost, assignmentString(m))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
	for _, l := range lag {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Topic, l.Partition, offsetOrDash(l.Committed), offsetOrDash(l.End), offsetOrDash(l.Lag),
			orDash(l.MemberID), orDash(l.ClientHost), orDash(l.ClientID))
	}
	return tw.Flush()
}

// assignmentString shows an assignment as topic:0,1 other:2, sorted.
func assignmentString(m spool.GroupMember) string {
	if m.AssignmentErr != nil {
		return "(undecodable: " + m.AssignmentErr.Error() + ")"
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(m.Assignment)) {
		ps := slices.Clone(m.Assignment[t])
		slices.Sort(ps)
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, t+":"+strings.Join(s, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func groupDelete(ctx context.Context, ad *spool.Admin, groups []string, stdout, stderr io.Writer) error {
	res, err := ad.DeleteGroups(ctx, groups...)
	if err != nil {
		return err
	}
	failed := 0
	for _, g := range groups {
		switch err := res[g]; {
		case err == nil:
			fmt.Fprintf(stdout, "deleted %s\n", g)
		case errors.Is(err, wire.ErrGroupIdNotFound):
			fmt.Fprintf(stderr, "spool: group %q does not exist: %v\n", g, err)
			failed++
		case errors.Is(err, wire.ErrNonEmptyGroup):
			fmt.Fprintf(stderr, "spool: group %q has active members; stop them first: %v\n", g, err)
			failed++
		default:
			fmt.Fprintf(stderr, "spool: group %q: %v\n", g, err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d groups not deleted", failed, len(groups))
	}
	return nil
}

// topicPartitions returns parts, or every partition of topic when parts is empty, checking
// that the topic and partitions exist.
func topicPartitions(ctx context.Context, ad *spool.Admin, topic string, parts []int32) ([]int32, error) {
	ds, err := ad.DescribeTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	if len(ds) != 1 || ds[0].Err != nil {
		var terr error = wire.ErrUnknownTopicOrPartition
		if len(ds) == 1 {
			terr = ds[0].Err
		}
		return nil, fmt.Errorf("topic %q: %w", topic, terr)
	}
	n := int32(len(ds[0].Partitions))
	if len(parts) == 0 {
		for p := range n {
			parts = append(parts, p)
		}
		return parts, nil
	}
	for _, p := range parts {
		if p >= n {
			return nil, fmt.Errorf("topic %q has %d partitions, no partition %d: %w", topic, n, p, wire.ErrUnknownTopicOrPartition)
		}
	}
	return parts, nil
}

func groupSeek(ctx context.Context, ad *spool.Admin, group, topic string, parts []int32, to seekTarget, create bool, stdout io.Writer) error {
	d, err := describeGroup(ctx, ad, group)
	switch {
	case errors.Is(err, wire.ErrGroupIdNotFound) && create:
	case err != nil && errors.Is(err, wire.ErrGroupIdNotFound):
		return fmt.Errorf("%w (add --create to start a new group at these offsets)", err)
	case err != nil:
		return err
	case len(d.Members) > 0:
		return fmt.Errorf("seeking group %q (%d members): %w", group, len(d.Members), spool.ErrGroupActive)
	}
	parts, err = topicPartitions(ctx, ad, topic, parts)
	if err != nil {
		return err
	}
	offsets := map[int32]int64{}
	if to.exact {
		// Clamped into the log, as kafka-consumer-groups.sh --to-offset does: an offset past
		// either end would only make the consumers reset.
		first, err := ad.ListOffsets(ctx, topic, spool.OffsetEarliest)
		if err != nil {
			return err
		}
		end, err := ad.ListOffsets(ctx, topic, spool.OffsetLatest)
		if err != nil {
			return err
		}
		for _, p := range parts {
			offsets[p] = min(max(to.offset, first[p]), end[p])
		}
	} else {
		all, err := ad.ListOffsets(ctx, topic, to.at)
		if err != nil {
			return err
		}
		var ends map[int32]int64
		for _, p := range parts {
			offsets[p] = all[p]
			if all[p] < 0 && to.isTime {
				// No record at or after the time: the group starts at the end, as
				// kafka-consumer-groups.sh --to-datetime does.
				if ends == nil {
					if ends, err = ad.ListOffsets(ctx, topic, spool.OffsetLatest); err != nil {
						return err
					}
				}
				offsets[p] = ends[p]
			}
		}
	}
	if err := ad.CommitGroupOffsets(ctx, group, map[string]map[int32]int64{topic: offsets}); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", group, topic, p, offsets[p])
	}
	return tw.Flush()
}

func groupDeleteOffsets(ctx context.Context, ad *spool.Admin, group, topic string, parts []int32, stdout io.Writer) error {
	if _, err := describeGroup(ctx, ad, group); err != nil {
		return err
	}
	if len(parts) == 0 {
		// Every committed partition of the topic, which still works for a deleted topic.
		committed, err := ad.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		parts = slices.Sorted(maps.Keys(committed[topic]))
		if len(parts) == 0 {
			return fmt.Errorf("group %q has no committed offsets for topic %q", group, topic)
		}
	}
	res, err := ad.DeleteGroupOffsets(ctx, group, map[string][]int32{topic: parts})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tRESULT")
	var failed []error
	for _, p := range slices.Sorted(maps.Keys(res[topic])) {
		result := "deleted"
		if err := res[topic][p]; err != nil {
			result = err.Error()
			failed = append(failed, fmt.Errorf("%s[%d]: %w", topic, p, err))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", topic, p, result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("offsets not deleted: %w", errors.Join(failed...))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func offsetOrDash(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}
