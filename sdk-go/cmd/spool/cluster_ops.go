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
	throttle := fs.String("throttle", "", "limit the copying to RATE bytes per second per broker, e.g. 50MB (default: no limit)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := fs.noArgs(); err != nil {
		return err
	}
	rate, err := parseRate(*throttle)
	if err != nil {
		return fs.bad("cluster rebalance: --throttle: %v", err)
	}
	return planAndRun(ctx, clientFor, nil, *execute, rate, stdout)
}

func clusterDecommission(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster decommission")
	planOnly := fs.Bool("plan", false, "only show the moves")
	throttle := fs.String("throttle", "", "limit the copying to RATE bytes per second per broker, e.g. 50MB (default: no limit)")
	if err := fs.parse(args); err != nil {
		return err
	}
	rate, err := parseRate(*throttle)
	if err != nil {
		return fs.bad("cluster decommission: --throttle: %v", err)
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
	return planAndRun(ctx, clientFor, ids, !*planOnly, rate, stdout)
}

// parseRate reads a byte rate: a number with an optional unit, B, KB, MB, GB (powers of 1000)
// or KiB, MiB, GiB (powers of 1024); "" is no limit (0).
func parseRate(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := s, int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || n <= 0 || n*float64(mult) < 1 {
		return 0, fmt.Errorf("%q: want a positive rate such as 50MB or 10MiB (bytes per second)", s)
	}
	return int64(n * float64(mult)), nil
}

// throttleMoves limits the copying of moves to rate bytes per second on every broker, on both
// sides as Kafka's kafka-reassign-partitions does: the cluster-wide
// leader.replication.throttled.rate and follower.replication.throttled.rate, and per topic
// leader.replication.throttled.replicas naming the replicas the data is copied from and
// follower.replication.throttled.replicas those being added. The returned function removes
// them all.
func throttleMoves(ctx context.Context, ad *spool.Admin, moves []spool.Move, rate int64, w io.Writer) (func(), error) {
	const (
		leaderRate, followerRate = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
		leaderList, followerList = "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"
	)
	lists := map[string]map[string][]string{} // topic → config → PARTITION:BROKER pairs
	for _, m := range moves {
		if lists[m.Topic] == nil {
			lists[m.Topic] = map[string][]string{}
		}
		for _, r := range m.From {
			lists[m.Topic][leaderList] = append(lists[m.Topic][leaderList], fmt.Sprintf("%d:%d", m.Partition, r))
		}
		for _, r := range m.Copies() {
			lists[m.Topic][followerList] = append(lists[m.Topic][followerList], fmt.Sprintf("%d:%d", m.Partition, r))
		}
	}
	cluster := spool.ConfigResource{Type: spool.ConfigResourceBroker}
	clear := func() {
		ctx := context.WithoutCancel(ctx)
		for topic := range lists {
			if err := ad.AlterTopicConfigs(ctx, topic, map[string]*string{leaderList: nil, followerList: nil}); err != nil {
				fmt.Fprintln(w, "removing the throttle:", err)
			}
		}
		if err := ad.AlterConfigs(ctx, cluster, map[string]*string{leaderRate: nil, followerRate: nil}); err != nil {
			fmt.Fprintln(w, "removing the throttle:", err)
		}
	}
	v := strconv.FormatInt(rate, 10)
	if err := ad.AlterConfigs(ctx, cluster, map[string]*string{leaderRate: &v, followerRate: &v}); err != nil {
		return nil, err
	}
	for topic, cfgs := range lists {
		set := map[string]*string{}
		for k, pairs := range cfgs {
			list := strings.Join(pairs, ",")
			set[k] = &list
		}
		if err := ad.AlterTopicConfigs(ctx, topic, set); err != nil {
			clear()
			return nil, err
		}
	}
	fmt.Fprintf(w, "throttled to %s/s per broker\n", humanBytes(rate))
	return clear, nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// planAndRun plans a balance (emptying exclude), prints it, and with execute moves the
// replicas, waits for the moves, and puts the preferred leaders in the lead.
func planAndRun(ctx context.Context, clientFor clientFunc, exclude []int32, execute bool, throttle int64, stdout io.Writer) error {
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
	if throttle > 0 {
		clear, err := throttleMoves(ctx, ad, moves, throttle, stdout)
		if err != nil {
			return err
		}
		defer clear()
	}
	res, err := ad.AlterReassignments(ctx, targets)
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return err
	}
	took, err := waitMoves(ctx, ad, moves, stdout)
	if err != nil {
		return err
	}
	parts := map[string][]int32{}
	for _, m := range moves {
		parts[m.Topic] = append(parts[m.Topic], m.Partition)
	}
	if err := electPreferred(ctx, ad, parts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "done: %d partitions moved in %.2fs, preferred leaders elected\n", len(moves), took.Seconds())
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

// waitMoves waits until every move is done, printing progress (partitions done, bytes copied,
// rate, ETA) when a partition completes and every second in between, and returns how long
// the moves took. A move is done when no broker lists it in progress and the metadata shows
// its target replica list: brokers learn of a move a moment apart, so the list alone could
// say "done" before the broker asked has seen the move start. Bytes come from
// DescribeLogDirs: the size of each new replica against the size of the partition's largest.
func waitMoves(ctx context.Context, ad *spool.Admin, moves []spool.Move, w io.Writer) (time.Duration, error) {
	start := time.Now()
	lastDone, lastPrint := -1, time.Time{}
	topics := map[string]bool{}
	for _, m := range moves {
		topics[m.Topic] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	slices.Sort(names)
	for {
		list, err := ad.ListReassignments(ctx)
		if err != nil {
			return 0, err
		}
		details, err := ad.DescribeTopics(ctx, names...)
		if err != nil {
			return 0, err
		}
		dirs, _ := ad.DescribeLogDirs(ctx, names...) // partial sizes still show progress
		done := 0
		var copied, total int64
		for _, m := range moves {
			listed := slices.ContainsFunc(list, func(r spool.Reassignment) bool { return r.Topic == m.Topic && r.Partition == m.Partition })
			finished := !listed && placed(details, m)
			if finished {
				done++
			}
			c, t := copyProgress(dirs, m, finished)
			copied, total = copied+c, total+t
		}
		now := time.Now()
		if done != lastDone || now.Sub(lastPrint) >= time.Second || done == len(moves) {
			bar := progressBar(int64(done), int64(len(moves)))
			rate := copyRate(copied, total, now.Sub(start))
			if total > 0 && copied < total {
				bar = progressBar(copied, total)
			} else if done < len(moves) {
				// Every byte is copied, and the moves finish as the new replicas join their
				// ISRs and the old ones go: a full bar beside "0/4 moved" would contradict.
				rate += fmt.Sprintf(", waiting for %d new replica(s) to join the ISR", len(moves)-done)
			}
			fmt.Fprintf(w, "%s %d/%d partitions moved, %s\n", bar, done, len(moves), rate)
			lastDone, lastPrint = done, now
		}
		if done == len(moves) {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for the moves: %w (they go on; spool cluster reassignments shows them)", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// copyProgress is how many bytes m's new replicas hold and how many they need: the size of
// the partition's largest replica each (all of it once the move is finished).
func copyProgress(dirs []spool.ReplicaLogDir, m spool.Move, finished bool) (copied, total int64) {
	var biggest int64
	sizes := map[int32]int64{}
	for _, d := range dirs {
		if d.Topic == m.Topic && d.Partition == m.Partition {
			sizes[d.Broker] = d.Size
			biggest = max(biggest, d.Size)
		}
	}
	for _, r := range m.Copies() {
		total += biggest
		if finished {
			copied += biggest
		} else {
			copied += min(sizes[r], biggest)
		}
	}
	return copied, total
}

// copyRate says how much is copied, how fast, and when it should be done.
func copyRate(copied, total int64, elapsed time.Duration) string {
	out := fmt.Sprintf("%s of %s copied", humanBytes(copied), humanBytes(total))
	secs := elapsed.Seconds()
	if secs <= 0 {
		return out
	}
	rate := float64(copied) / secs
	out += fmt.Sprintf(", %s/s", humanBytes(int64(rate)))
	if rate > 0 && copied < total {
		out += fmt.Sprintf(", ETA %s", (time.Duration(float64(total-copied) / rate * float64(time.Second))).Round(time.Second))
	}
	return out + fmt.Sprintf(", %.1fs", secs)
}

// placed reports whether the metadata shows m's partition on exactly its target replicas.
func placed(details []spool.TopicDetail, m spool.Move) bool {
	for _, t := range details {
		if t.Name != m.Topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == m.Partition {
				return slices.Equal(p.Replicas, m.To)
			}
		}
	}
	return false
}

func progressBar(done, total int64) string {
	const width = 20
	n := int64(width)
	if total > 0 {
		n = min(done*width/total, width)
	}
	return "[" + strings.Repeat("#", int(n)) + strings.Repeat(".", width-int(n)) + "]"
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
	total := 0 // partitions asked about
	if *topic == "" {
		// Every partition: the controller answers only for those it elected or tried to, as
		// Kafka's does, so the others are counted here as already led by their preferred
		// replica (or, unclean, by an in-sync one).
		tds, err := ad.DescribeTopics(ctx)
		if err != nil {
			return err
		}
		for _, td := range tds {
			total += len(td.Partitions)
		}
	} else {
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
		total = len(parts[*topic])
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
	if parts == nil {
		notNeeded = max(notNeeded, total-elected-len(failed))
	}
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
