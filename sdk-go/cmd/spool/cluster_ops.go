package main

// Moving replicas and leaders: spool cluster rebalance, decommission, elect-leaders and
// reassignments. The plan comes from spool.PlanBalance; the brokers carry it out through
// Kafka's AlterPartitionReassignments, so the same commands work against Apache Kafka.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

func clusterOps(ctx context.Context, clientFor clientFunc, sub string, args []string, stdout io.Writer) error {
	switch sub {
	case "rebalance":
		return clusterRebalance(ctx, clientFor, args, stdout)
	case "decommission":
		return clusterDecommission(ctx, clientFor, args, stdout)
	case "elect-leaders":
		return clusterElectLeaders(ctx, clientFor, args, stdout)
	case "reassignments":
		return clusterReassignments(ctx, clientFor, args, stdout)
	}
	return usageError{msg: "cluster: unknown subcommand " + sub}
}

func clusterRebalance(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster rebalance")
	fs.Bool("plan", true, "only show the moves (the default)")
	execute := fs.Bool("execute", false, "carry the moves out and wait until they complete")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := fs.noArgs(); err != nil {
		return err
	}
	return planAndRun(ctx, clientFor, nil, *execute, stdout)
}

func clusterDecommission(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster decommission")
	planOnly := fs.Bool("plan", false, "only show the moves")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fs.bad("cluster decommission: missing broker id")
	}
	var ids []int32
	for _, a := range fs.Args() {
		n, err := strconv.ParseInt(a, 10, 32)
		if err != nil || n < 0 {
			return fs.bad("cluster decommission: broker id %q: want a number >= 0", a)
		}
		ids = append(ids, int32(n))
	}
	return planAndRun(ctx, clientFor, ids, !*planOnly, stdout)
}

// planAndRun plans a balance (emptying exclude), prints it, and with execute moves the
// replicas, waits for the moves, and puts the preferred leaders in the lead.
func planAndRun(ctx context.Context, clientFor clientFunc, exclude []int32, execute bool, stdout io.Writer) error {
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	ci, err := ad.Cluster(ctx)
	if err != nil {
		return err
	}
	for _, id := range exclude {
		if !slices.ContainsFunc(ci.Brokers, func(b spool.BrokerDetail) bool { return b.NodeID == id }) {
			return usageError{msg: fmt.Sprintf("broker %d is not in the cluster (brokers: %s)", id, brokerList(ci.Brokers))}
		}
	}
	topics, err := ad.DescribeTopics(ctx)
	if err != nil {
		return err
	}
	moving, err := ad.ListReassignments(ctx)
	if err != nil {
		return err
	}
	topics = withoutMoving(topics, moving)
	moves, err := spool.PlanBalance(ci.Brokers, topics, exclude...)
	if err != nil {
		return err
	}
	printPlan(stdout, moves, ci.Brokers, topics)
	if !execute || len(moves) == 0 {
		return nil
	}
	targets := map[string]map[int32][]int32{}
	for _, m := range moves {
		if targets[m.Topic] == nil {
			targets[m.Topic] = map[int32][]int32{}
		}
		targets[m.Topic][m.Partition] = m.To
	}
	res, err := ad.AlterReassignments(ctx, targets)
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return err
	}
	if err := waitMoves(ctx, ad, moves, stdout); err != nil {
		return err
	}
	parts := map[string][]int32{}
	for _, m := range moves {
		parts[m.Topic] = append(parts[m.Topic], m.Partition)
	}
	if err := electPreferred(ctx, ad, parts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "done: %d partitions moved, preferred leaders elected\n", len(moves))
	return nil
}

// withoutMoving leaves out partitions being moved already: their lists are in flux.
func withoutMoving(topics []spool.TopicDetail, moving []spool.Reassignment) []spool.TopicDetail {
	var out []spool.TopicDetail
	for _, t := range topics {
		tt := t
		tt.Partitions = nil
		for _, p := range t.Partitions {
			if !slices.ContainsFunc(moving, func(r spool.Reassignment) bool { return r.Topic == t.Name && r.Partition == p.Partition }) {
				tt.Partitions = append(tt.Partitions, p)
			}
		}
		out = append(out, tt)
	}
	return out
}

func brokerList(bs []spool.BrokerDetail) string {
	var ids []string
	for _, b := range bs {
		ids = append(ids, strconv.Itoa(int(b.NodeID)))
	}
	return strings.Join(ids, ",")
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// printPlan prints the moves and the replicas and preferred leaders per broker after them.
func printPlan(w io.Writer, moves []spool.Move, brokers []spool.BrokerDetail, topics []spool.TopicDetail) {
	copies := 0
	for _, m := range moves {
		copies += len(m.Copies())
	}
	fmt.Fprintf(w, "%d partitions to move, %d replicas to copy\n", len(moves), copies)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(moves) > 0 {
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tFROM\tTO")
		for _, m := range moves {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Topic, m.Partition, joinIDs(m.From), joinIDs(m.To))
		}
		tw.Flush()
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			rs := p.Replicas
			if i := slices.IndexFunc(moves, func(m spool.Move) bool { return m.Topic == t.Name && m.Partition == p.Partition }); i >= 0 {
				rs = moves[i].To
			}
			for i, r := range rs {
				replicas[r]++
				if i == 0 {
					leaders[r]++
				}
			}
		}
	}
	fmt.Fprintln(w, "after the moves:")
	fmt.Fprintln(tw, "  BROKER\tRACK\tREPLICAS\tPREFERRED LEADERS")
	for _, b := range brokers {
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%d\n", b.NodeID, orDash(b.Rack), replicas[b.NodeID], leaders[b.NodeID])
	}
	tw.Flush()
}

// waitMoves waits until none of moves is in progress, printing progress as partitions
// complete.
func waitMoves(ctx context.Context, ad *spool.Admin, moves []spool.Move, w io.Writer) error {
	start := time.Now()
	last := -1
	for {
		list, err := ad.ListReassignments(ctx)
		if err != nil {
			return err
		}
		left := 0
		for _, m := range moves {
			if slices.ContainsFunc(list, func(r spool.Reassignment) bool { return r.Topic == m.Topic && r.Partition == m.Partition }) {
				left++
			}
		}
		done := len(moves) - left
		if done != last {
			fmt.Fprintf(w, "%s %d/%d partitions moved, %.1fs\n", progressBar(done, len(moves)), done, len(moves), time.Since(start).Seconds())
			last = done
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the moves: %w (they go on; spool cluster reassignments shows them)", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func progressBar(done, total int) string {
	const width = 20
	n := width
	if total > 0 {
		n = done * width / total
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// electPreferred puts preferred leaders in the lead, retrying while a preferred replica is
// still joining the ISR; partitions whose preferred leader leads already are fine.
func electPreferred(ctx context.Context, ad *spool.Admin, parts map[string][]int32) error {
	for attempt := 0; ; attempt++ {
		res, err := ad.ElectLeaders(ctx, false, parts)
		if err != nil {
			return err
		}
		left := map[string][]int32{}
		var last error
		for t, ps := range res {
			for p, err := range ps {
				if err != nil && !errors.Is(err, wire.ErrElectionNotNeeded) {
					left[t] = append(left[t], p)
					last = fmt.Errorf("%s-%d: %w", t, p, err)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if attempt == 50 {
			return fmt.Errorf("electing preferred leaders: %w", last)
		}
		parts = left
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func clusterElectLeaders(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster elect-leaders")
	topic := fs.String("topic", "", "only this topic's partitions (default: every partition)")
	unclean := fs.Bool("unclean", false, "elect any live replica where no in-sync replica is alive (may lose acknowledged records)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := fs.noArgs(); err != nil {
		return err
	}
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	var parts map[string][]int32
	if *topic != "" {
		td, err := ad.DescribeTopics(ctx, *topic)
		if err != nil {
			return err
		}
		if len(td) != 1 || td[0].Err != nil {
			return fmt.Errorf("topic %q: %w", *topic, wire.ErrUnknownTopicOrPartition)
		}
		parts = map[string][]int32{}
		for _, p := range td[0].Partitions {
			parts[*topic] = append(parts[*topic], p.Partition)
		}
	}
	res, err := ad.ElectLeaders(ctx, *unclean, parts)
	if err != nil {
		return err
	}
	elected, notNeeded := 0, 0
	var failed []string
	for t, ps := range res {
		for p, err := range ps {
			switch {
			case err == nil:
				elected++
			case errors.Is(err, wire.ErrElectionNotNeeded):
				notNeeded++
			default:
				failed = append(failed, fmt.Sprintf("%s-%d: %v", t, p, err))
			}
		}
	}
	slices.Sort(failed)
	fmt.Fprintf(stdout, "%d leaders elected, %d already in place\n", elected, notNeeded)
	for _, f := range failed {
		fmt.Fprintln(stdout, "failed:", f)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d elections failed", len(failed))
	}
	return nil
}

func clusterReassignments(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster reassignments")
	cancel := fs.Bool("cancel", false, "cancel every move in progress (the partitions go back to their original replicas)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := fs.noArgs(); err != nil {
		return err
	}
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	list, err := ad.ListReassignments(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no reassignments in progress")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING")
	for _, r := range list {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", r.Topic, r.Partition, joinIDs(r.Replicas), orDash(joinIDs(r.Adding)), orDash(joinIDs(r.Removing)))
	}
	tw.Flush()
	if !*cancel {
		return nil
	}
	targets := map[string]map[int32][]int32{}
	for _, r := range list {
		if targets[r.Topic] == nil {
			targets[r.Topic] = map[int32][]int32{}
		}
		targets[r.Topic][r.Partition] = nil
	}
	res, err := ad.AlterReassignments(ctx, targets)
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d reassignments cancelled\n", len(list))
	return nil
}
