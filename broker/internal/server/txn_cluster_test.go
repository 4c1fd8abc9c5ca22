package server_test

// Transactions in a cluster (issue 29): franz-go's GroupTransactSession copies a topic with
// the transaction coordinator, the group coordinator and the output partitions' leaders on
// three different brokers, so every marker of a committed transaction crosses brokers
// (WriteTxnMarkers to the output leader and to the group coordinator, whose pending
// transactional offsets the marker settles), and every transactional produce is verified
// with the coordinator across brokers (KIP-890 part 1). The output, read with
// read_committed, holds each input record exactly once; the group's committed offsets are
// the input's ends. The other tests kill the transaction coordinator's or the group
// coordinator's broker with SIGKILL while a commit is in flight and restart it later: still
// exactly once.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

func TestTxnClusterSessionAcrossBrokers(t *testing.T) {
	heavy(t)
	c, roles := runTxnClusterETL(t, killNone)
	t.Run("ProduceVerifiedWithRemoteCoordinator", func(t *testing.T) { testRemoteVerification(t, c, roles) })
}

func TestTxnClusterSessionCoordinatorKilled(t *testing.T) {
	heavy(t)
	runTxnClusterETL(t, killTxnCoordinator)
}

// TestTxnClusterSessionGroupCoordinatorKilled: the group coordinator's broker is killed while
// a commit is in flight; the new leader of the group's __consumer_offsets partition rebuilds
// the pending transactional offsets from the log and the markers settle them there.
func TestTxnClusterSessionGroupCoordinatorKilled(t *testing.T) {
	heavy(t)
	runTxnClusterETL(t, killGroupCoordinator)
}

// txnKill is which broker a cluster transaction test kills mid-stream.
type txnKill int

const (
	killNone txnKill = iota
	killTxnCoordinator
	killGroupCoordinator
)

// txnRoles are the brokers of a cluster transaction test, and the ids chosen so.
type txnRoles struct {
	txnCoord, groupCoord, outLeader int32
	txnID, groupID                  string
	// verifyID is another transactional id coordinated away from the output leader, by
	// verifyCoord.
	verifyID    string
	verifyCoord int32
	// verifyGroup is a group coordinated by another broker than verifyCoord, by
	// verifyGroupCoord.
	verifyGroup      string
	verifyGroupCoord int32
}

// pickTxnRoles picks a transactional id and a group id whose coordinators are different
// brokers, neither of them outLeader, the output partition's leader.
func pickTxnRoles(t *testing.T, adm *kadm.Client, prefix string, outLeader int32) txnRoles {
	t.Helper()
	var txnIDs, groupIDs []string
	for i := range 40 {
		txnIDs = append(txnIDs, fmt.Sprintf("%s-tx-%d", prefix, i))
		groupIDs = append(groupIDs, fmt.Sprintf("%s-group-%d", prefix, i))
	}
	var txnCo, groupCo map[string]int32
	find := func(kind string, f func(context.Context, ...string) kadm.FindCoordinatorResponses, ids []string) (map[string]int32, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out := map[string]int32{}
		for id, r := range f(ctx, ids...) {
			if r.Err != nil {
				return nil, fmt.Sprintf("%s coordinator of %s: %v", kind, id, r.Err)
			}
			out[id] = r.NodeID
		}
		return out, ""
	}
	brokertest.WaitForState(t, 90*time.Second, "coordinators for every candidate id", func() (bool, string) {
		var why string
		if txnCo, why = find("transaction", adm.FindTxnCoordinators, txnIDs); txnCo == nil {
			return false, why
		}
		if groupCo, why = find("group", adm.FindGroupCoordinators, groupIDs); groupCo == nil {
			return false, why
		}
		return true, ""
	})
	sort.Strings(txnIDs)
	for _, tx := range txnIDs {
		for _, g := range groupIDs {
			if txnCo[tx] != groupCo[g] && txnCo[tx] != outLeader && groupCo[g] != outLeader {
				r := txnRoles{txnCoord: txnCo[tx], groupCoord: groupCo[g], outLeader: outLeader, txnID: tx, groupID: g}
				for _, v := range txnIDs {
					if v == tx || txnCo[v] == outLeader {
						continue
					}
					for _, vg := range groupIDs {
						if vg != g && groupCo[vg] != txnCo[v] {
							r.verifyID, r.verifyCoord = v, txnCo[v]
							r.verifyGroup, r.verifyGroupCoord = vg, groupCo[vg]
							return r
						}
					}
				}
			}
		}
	}
	t.Fatalf("no transactional id and group id with coordinators on two brokers other than %d: %v %v", outLeader, txnCo, groupCo)
	return txnRoles{}
}

func runTxnClusterETL(t *testing.T, kill txnKill) (*brokertest.Cluster, txnRoles) {
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 3, zk.Connect(""), withProps(map[string]string{
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "6", "offsets.topic.replication.factor": "3",
		"transaction.state.log.num.partitions": "6",
		"auto.leader.rebalance.enable":         "false",
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	createReplicated(t, adm, "etl-in", 2)
	outMD := createReplicated(t, adm, "etl-out", 1)
	roles := pickTxnRoles(t, adm, "etl", outMD.Partitions[0].Leader)
	A, B, C := roles.txnCoord, roles.groupCoord, roles.outLeader
	t.Logf("transaction coordinator %d (%s), group coordinator %d (%s), output leader %d", A, roles.txnID, B, roles.groupID, C)
	if A == B || B == C || A == C {
		t.Fatalf("roles are not three different brokers: %+v", roles)
	}
	victim := map[txnKill]int32{killTxnCoordinator: A, killGroupCoordinator: B}[kill]

	const n = 300
	in, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("etl-in"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for i := 0; i < n; i += 10 {
		var recs []*kgo.Record
		for j := i; j < i+10; j++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprintf("in-%03d", j))})
		}
		if err := in.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID(roles.txnID), kgo.ConsumerGroup(roles.groupID),
		kgo.ConsumeTopics("etl-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic("etl-out"), kgo.FetchMaxBytes(400), kgo.FetchMaxPartitionBytes(400), kgo.TransactionTimeout(60*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithLogger(kgo.BasicLogger(testLogWriter{t}, kgo.LogLevelInfo, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	round, aborted, committedIn := 0, 0, 0
	killed, restarted := false, false
	for committedIn < n {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after %d rounds (%d records committed, %d aborts): %v", round, committedIn, aborted, ctx.Err())
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch: %v", e.Err)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		round++
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		count := 0
		fs.EachRecord(func(r *kgo.Record) {
			count++
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: append([]byte("out-"), r.Value...)}, nil)
		})
		commit := round%3 != 0
		var killDone chan struct{}
		if kill != killNone && !killed && commit && committedIn >= n/3 {
			// SIGKILL the coordinator's broker while this commit is in flight.
			killed, killDone = true, make(chan struct{})
			go func() {
				defer close(killDone)
				c.Kill(t, victim)
			}()
		}
		committed, err := sess.End(ctx, kgo.TransactionEndTry(commit))
		if killDone != nil {
			<-killDone
			t.Logf("round %d: broker %d killed during the commit (committed=%v)", round, victim, committed)
		}
		if err != nil {
			t.Fatalf("round %d: end: %v", round, err)
		}
		switch {
		case committed:
			committedIn += count
		case commit:
			t.Logf("round %d: the session aborted instead of committing (a rebalance)", round)
		default:
			aborted++
		}
		if killed && !restarted && committedIn >= 2*n/3 {
			c.Restart(t, victim)
			restarted = true
			t.Logf("round %d: broker %d restarted", round, victim)
		}
	}
	if killed && !restarted {
		c.Restart(t, victim)
	}
	if aborted == 0 {
		t.Fatal("no transaction was aborted: the test proves nothing about aborts")
	}
	if killed {
		c.WaitBrokers(t, 3)
	} else if kill != killNone {
		t.Fatal("the stream ended before the kill")
	}
	out := readTxnTopic(ctx, t, c.Proxies[C].Addr, "etl-out", 1, true)
	seen := map[string]int{}
	for _, v := range out {
		seen[v]++
	}
	for i := range n {
		if v := fmt.Sprintf("out-in-%03d", i); seen[v] != 1 {
			t.Errorf("%s is in the output %d times, want exactly once", v, seen[v])
		}
	}
	if len(out) != n {
		t.Errorf("the output holds %d records, want %d", len(out), n)
	}
	// The admin client's connections may predate a kill: ask until an answer comes.
	var ends kadm.ListedOffsets
	var offs kadm.OffsetResponses
	brokertest.WaitForState(t, 60*time.Second, "the input's ends and the group's offsets", func() (bool, string) {
		var err error
		if ends, err = adm.ListEndOffsets(ctx, "etl-in"); err == nil {
			offs, err = adm.FetchOffsets(ctx, roles.groupID)
		}
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			err = offs.Error()
		}
		return err == nil, fmt.Sprint(err)
	})
	for p, e := range ends["etl-in"] {
		if o, ok := offs.Lookup("etl-in", p); !ok || o.At != e.Offset {
			t.Errorf("etl-in-%d: committed offset %v, want the end %d", p, o.At, e.Offset)
		}
	}
	t.Logf("%d rounds, %d aborted on purpose; output %d records", round, aborted, len(out))
	return c, roles
}

// testRemoteVerification: KIP-890 part 1 across brokers. A transactional batch sent to the
// output partition's leader, whose transaction coordinator is another broker, is refused with
// INVALID_TXN_STATE until the partition is in the producer's open transaction, accepted then,
// refused again once the transaction has ended (a late write cannot reopen it), and refused
// with INVALID_PRODUCER_EPOCH once a new instance of the id has fenced the producer. The same
// holds for TxnOffsetCommit on a third broker.
func testRemoteVerification(t *testing.T, c *brokertest.Cluster, roles txnRoles) {
	if roles.verifyCoord == roles.outLeader {
		t.Fatalf("the verifying id's coordinator %d leads the output partition", roles.verifyCoord)
	}
	id := roles.verifyID
	co := dial(t, c.Proxies[roles.verifyCoord].Addr)
	leader := dial(t, c.Proxies[roles.outLeader].Addr)
	retriable := func(code int16) bool {
		return code == wire.ErrConcurrentTransactions.Code || code == wire.ErrCoordinatorLoadInProgress.Code
	}
	init := &wire.InitProducerIdResponse{}
	brokertest.WaitForState(t, 30*time.Second, "InitProducerId of "+id, func() (bool, string) {
		init = &wire.InitProducerIdResponse{}
		co.roundTrip(&wire.InitProducerIdRequest{TransactionalId: &id, TransactionTimeoutMs: 60000, ProducerId: -1, ProducerEpoch: -1}, init, 4)
		return !retriable(init.ErrorCode), fmt.Sprint(wire.ErrorForCode(init.ErrorCode))
	})
	wantCode(t, "InitProducerId", init.ErrorCode, nil)
	seq := int32(0)
	produce := func(value string) int16 {
		t.Helper()
		b := batch.NewBuilder()
		b.SetProducer(init.ProducerId, init.ProducerEpoch, seq)
		b.SetTransactional(true)
		b.Append(time.Now().UnixMilli(), nil, []byte(value), nil)
		recs, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		req := &wire.ProduceRequest{TransactionalId: &id, Acks: -1, TimeoutMs: 10000, TopicData: []wire.ProduceRequestTopicProduceData{{
			Name: "etl-out", PartitionData: []wire.ProduceRequestPartitionProduceData{{Index: 0, Records: recs}}}}}
		resp := &wire.ProduceResponse{}
		leader.roundTrip(req, resp, 9)
		code := resp.Responses[0].PartitionResponses[0].ErrorCode
		if code == 0 {
			seq++
		}
		return code
	}
	wantCode(t, "a transactional produce before AddPartitionsToTxn", produce("stray"), wire.ErrInvalidTxnState)
	add := &wire.AddPartitionsToTxnResponse{}
	brokertest.WaitForState(t, 30*time.Second, "AddPartitionsToTxn", func() (bool, string) {
		add = &wire.AddPartitionsToTxnResponse{}
		co.roundTrip(&wire.AddPartitionsToTxnRequest{V3AndBelowTransactionalId: id, V3AndBelowProducerId: init.ProducerId, V3AndBelowProducerEpoch: init.ProducerEpoch,
			V3AndBelowTopics: []wire.AddPartitionsToTxnRequestV3Topic{{Name: "etl-out", Partitions: []int32{0}}}}, add, 3)
		code := add.ResultsByTopicV3AndBelow[0].ResultsByPartition[0].PartitionErrorCode
		return !retriable(code), fmt.Sprint(wire.ErrorForCode(code))
	})
	wantCode(t, "AddPartitionsToTxn", add.ResultsByTopicV3AndBelow[0].ResultsByPartition[0].PartitionErrorCode, nil)
	wantCode(t, "a transactional produce in the transaction", produce("in-txn"), nil)

	// TxnOffsetCommit to a group coordinator on a third broker is verified the same way, and
	// its offsets stay pending (UNSTABLE_OFFSET_COMMIT for require_stable) until the marker.
	if roles.verifyGroupCoord == roles.verifyCoord {
		t.Fatalf("the verifying group's coordinator %d is the transaction coordinator", roles.verifyGroupCoord)
	}
	gc := dial(t, c.Proxies[roles.verifyGroupCoord].Addr)
	offsetCommit := func() int16 {
		t.Helper()
		resp := &wire.TxnOffsetCommitResponse{}
		gc.roundTrip(&wire.TxnOffsetCommitRequest{TransactionalId: id, GroupId: roles.verifyGroup, ProducerId: init.ProducerId, ProducerEpoch: init.ProducerEpoch,
			GenerationId: -1, Topics: []wire.TxnOffsetCommitRequestTopic{{Name: "etl-in", Partitions: []wire.TxnOffsetCommitRequestPartition{{PartitionIndex: 0, CommittedOffset: 42, CommittedLeaderEpoch: -1}}}}}, resp, 3)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	fetchOffset := func() (int64, int16) {
		t.Helper()
		resp := &wire.OffsetFetchResponse{}
		gc.roundTrip(&wire.OffsetFetchRequest{GroupId: roles.verifyGroup, RequireStable: true, Topics: []wire.OffsetFetchRequestTopic{{Name: "etl-in", PartitionIndexes: []int32{0}}}}, resp, 7)
		if resp.ErrorCode != 0 {
			return -1, resp.ErrorCode
		}
		p := resp.Topics[0].Partitions[0]
		return p.CommittedOffset, p.ErrorCode
	}
	wantCode(t, "TxnOffsetCommit before AddOffsetsToTxn", offsetCommit(), wire.ErrInvalidTxnState)
	addOffsets := &wire.AddOffsetsToTxnResponse{}
	brokertest.WaitForState(t, 30*time.Second, "AddOffsetsToTxn", func() (bool, string) {
		addOffsets = &wire.AddOffsetsToTxnResponse{}
		co.roundTrip(&wire.AddOffsetsToTxnRequest{TransactionalId: id, ProducerId: init.ProducerId, ProducerEpoch: init.ProducerEpoch, GroupId: roles.verifyGroup}, addOffsets, 3)
		return !retriable(addOffsets.ErrorCode), fmt.Sprint(wire.ErrorForCode(addOffsets.ErrorCode))
	})
	wantCode(t, "AddOffsetsToTxn", addOffsets.ErrorCode, nil)
	wantCode(t, "TxnOffsetCommit in the transaction", offsetCommit(), nil)
	if _, code := fetchOffset(); code != wire.ErrUnstableOffsetCommit.Code {
		t.Fatalf("OffsetFetch require_stable during the transaction: %v, want UNSTABLE_OFFSET_COMMIT", wire.ErrorForCode(code))
	}
	end := &wire.EndTxnResponse{}
	co.roundTrip(&wire.EndTxnRequest{TransactionalId: id, ProducerId: init.ProducerId, ProducerEpoch: init.ProducerEpoch, Committed: false}, end, 3)
	wantCode(t, "EndTxn (abort)", end.ErrorCode, nil)
	wantCode(t, "a transactional produce after the transaction ended", produce("late"), wire.ErrInvalidTxnState)
	// The abort's marker reached the group coordinator's partition: the offset is dropped.
	brokertest.WaitForState(t, 30*time.Second, "the aborted offset settled", func() (bool, string) {
		off, code := fetchOffset()
		return code == 0, fmt.Sprintf("offset %d, %v", off, wire.ErrorForCode(code))
	})
	if off, _ := fetchOffset(); off != -1 {
		t.Fatalf("the aborted transaction's offset %d is the group's", off)
	}
	wantCode(t, "TxnOffsetCommit after the transaction ended", offsetCommit(), wire.ErrInvalidTxnState)

	// A new instance of the id fences the first: the zombie's write to the remote leader is
	// refused for its epoch.
	again := &wire.InitProducerIdResponse{}
	brokertest.WaitForState(t, 30*time.Second, "the second InitProducerId of "+id, func() (bool, string) {
		again = &wire.InitProducerIdResponse{}
		co.roundTrip(&wire.InitProducerIdRequest{TransactionalId: &id, TransactionTimeoutMs: 60000, ProducerId: -1, ProducerEpoch: -1}, again, 4)
		return !retriable(again.ErrorCode), fmt.Sprint(wire.ErrorForCode(again.ErrorCode))
	})
	wantCode(t, "the second InitProducerId", again.ErrorCode, nil)
	if again.ProducerId != init.ProducerId || again.ProducerEpoch != init.ProducerEpoch+1 {
		t.Fatalf("the second InitProducerId gave %d/%d, want %d/%d", again.ProducerId, again.ProducerEpoch, init.ProducerId, init.ProducerEpoch+1)
	}
	wantCode(t, "a transactional produce of the fenced epoch", produce("zombie"), wire.ErrInvalidProducerEpoch)
}

// testLogWriter writes a client's log lines to the test's log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
