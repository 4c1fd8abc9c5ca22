package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spoolmq/spool/broker/brokertest"
)

// consoleCall is one request to a broker's console API: method, path (under
// http://MetricsAddr), an optional JSON body, Basic credentials when user is set, and the
// X-Spool-Console header unless noHeader. It returns the status and the decoded JSON.
type consoleCall struct {
	method, path string
	body         any
	user, pass   string
	noHeader     bool
	origin       string
}

func (c consoleCall) do(t *testing.T, b *brokertest.Broker, out any) (int, string) {
	t.Helper()
	var body io.Reader
	if c.body != nil {
		switch v := c.body.(type) {
		case string:
			body = strings.NewReader(v)
		default:
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			body = strings.NewReader(string(data))
		}
	}
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, "http://"+b.MetricsAddr+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	if !c.noHeader {
		req.Header.Set("X-Spool-Console", "1")
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, c.path, ct)
	}
	var e struct {
		Error string `json:"error"`
	}
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(data, &e); err != nil || e.Error == "" {
			t.Errorf("%s %s: status %d without a JSON error message: %s", method, c.path, resp.StatusCode, data)
		}
	} else if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, c.path, err, data)
		}
	}
	return resp.StatusCode, e.Error
}

// browsed is the message browser's answer, as the page reads it.
type browsed struct {
	Start, Next   int64
	HighWatermark int64 `json:"highWatermark"`
	LastStable    int64 `json:"lastStableOffset"`
	Truncated     bool
	Isolation     string
	Records       []struct {
		Offset    int64
		Timestamp int64
		Key       []byte
		Value     []byte
		Headers   []struct {
			Key   string
			Value []byte
		}
	}
}

func (b browsed) values() []string {
	var out []string
	for _, r := range b.Records {
		out = append(out, string(r.Value))
	}
	return out
}

func browse(t *testing.T, b *brokertest.Broker, topic string, p int, query string) browsed {
	t.Helper()
	var out browsed
	if code, msg := (consoleCall{path: fmt.Sprintf("/console/api/topics/%s/partitions/%d/records?%s", url.PathEscape(topic), p, query)}).do(t, b, &out); code != 200 {
		t.Fatalf("browsing %s-%d?%s: %d %s", topic, p, query, code, msg)
	}
	return out
}

// TestConsoleAPIBrowse: the message browser reads a partition as a consumer would, from the
// beginning, an offset, a timestamp or the end, filters by key and value text, shows headers,
// leaves out an aborted transaction's records under read_committed (the default) and shows
// them under read_uncommitted, and answers bad input with 400 or 404, never a panic; without
// SASL users and spool.console.write, actions are refused with 403 and the hint.
func TestConsoleAPIBrowse(t *testing.T) {
	heavy(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"spool.metrics.listener": "127.0.0.1:0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "browse"); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 10 {
		r := &kgo.Record{Topic: "browse", Key: []byte(fmt.Sprintf("k%d", i%3)), Value: []byte(fmt.Sprintf(`{"n":%d,"who":"v%d"}`, i, i)),
			Timestamp: base.Add(time.Duration(i) * time.Minute), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprintf("h%d", i))}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// An aborted transaction, then a committed record, on partition 1.
	tx, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.TransactionalID("console-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "browse", Partition: 1, Value: []byte("aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "browse", Partition: 1, Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	all := browse(t, b, "browse", 0, "from=beginning")
	if len(all.Records) != 10 || all.HighWatermark != 10 || all.Next != 10 || all.Truncated || all.Isolation != "read_committed" {
		t.Fatalf("from the beginning: %+v", all)
	}
	for i, r := range all.Records {
		if r.Offset != int64(i) || string(r.Key) != fmt.Sprintf("k%d", i%3) || len(r.Headers) != 1 || r.Headers[0].Key != "trace" ||
			string(r.Headers[0].Value) != fmt.Sprintf("h%d", i) || r.Timestamp != base.Add(time.Duration(i)*time.Minute).UnixMilli() {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if got := browse(t, b, "browse", 0, "from=end&count=3"); len(got.Records) != 3 || got.Records[0].Offset != 7 || got.Start != 7 {
		t.Errorf("the last 3: %+v", got)
	}
	if got := browse(t, b, "browse", 0, "from=offset&offset=4&count=2"); len(got.Records) != 2 || got.Records[0].Offset != 4 || got.Next != 6 || !got.Truncated {
		t.Errorf("2 from offset 4: %+v", got)
	}
	ts := base.Add(5*time.Minute - time.Second).UnixMilli()
	if got := browse(t, b, "browse", 0, fmt.Sprintf("from=timestamp&timestamp=%d", ts)); len(got.Records) != 5 || got.Records[0].Offset != 5 {
		t.Errorf("from a timestamp: %+v", got)
	}
	if got := browse(t, b, "browse", 0, "key=k1"); strings.Join(got.values(), " ") != `{"n":1,"who":"v1"} {"n":4,"who":"v4"} {"n":7,"who":"v7"}` {
		t.Errorf("key k1: %q", got.values())
	}
	if got := browse(t, b, "browse", 0, "value="+url.QueryEscape(`"who":"v8"`)); len(got.Records) != 1 || got.Records[0].Offset != 8 {
		t.Errorf("value text: %+v", got)
	}
	if got := browse(t, b, "browse", 0, "key=nope"); len(got.Records) != 0 || got.Next != 10 {
		t.Errorf("a key nothing has: %+v", got)
	}
	if got := browse(t, b, "browse", 1, ""); strings.Join(got.values(), ",") != "committed" {
		t.Errorf("read_committed shows %q, want only the committed record", got.values())
	}
	if got := browse(t, b, "browse", 1, "isolation=read_uncommitted"); strings.Join(got.values(), ",") != "aborted,committed" {
		t.Errorf("read_uncommitted shows %q, want the aborted record too", got.values())
	}

	for _, bad := range []struct {
		path string
		want int
	}{
		{"/console/api/topics/browse/partitions/0/records?from=bogus", 400},
		{"/console/api/topics/browse/partitions/0/records?from=offset&offset=-1", 400},
		{"/console/api/topics/browse/partitions/0/records?from=offset", 400},
		{"/console/api/topics/browse/partitions/0/records?from=timestamp&timestamp=x", 400},
		{"/console/api/topics/browse/partitions/0/records?count=0", 400},
		{"/console/api/topics/browse/partitions/0/records?count=99999999999999999999", 400},
		{"/console/api/topics/browse/partitions/0/records?isolation=dirty", 400},
		{"/console/api/topics/browse/partitions/x/records", 400},
		{"/console/api/topics/browse/partitions/-1/records", 400},
		{"/console/api/topics/browse/partitions/99999999999/records", 400},
		{"/console/api/topics/browse/partitions/7/records", 404},
		{"/console/api/topics/nosuch/partitions/0/records", 404},
		{"/console/api/topics/%00%ff/partitions/0/records", 404},
		{"/console/api/nothing", 404},
	} {
		if code, msg := (consoleCall{path: bad.path}).do(t, b, nil); code != bad.want {
			t.Errorf("GET %s: %d %s, want %d", bad.path, code, msg, bad.want)
		}
	}
	// Offsets past the end give no records and a clamped start.
	if got := browse(t, b, "browse", 0, "from=offset&offset=1000"); len(got.Records) != 0 || got.Start != 10 {
		t.Errorf("offset past the end: %+v", got)
	}

	// Actions are off on a broker without SASL users unless spool.console.write=true.
	code, msg := (consoleCall{method: "POST", path: "/console/api/topics", body: map[string]any{"name": "made"}}).do(t, b, nil)
	if code != 403 || !strings.Contains(msg, "spool.console.write=true") {
		t.Errorf("creating a topic on a read-only console: %d %q", code, msg)
	}
	code, msg = (consoleCall{method: "DELETE", path: "/console/api/topics/browse"}).do(t, b, nil)
	if code != 403 || !strings.Contains(msg, "spool.console.write") {
		t.Errorf("deleting a topic on a read-only console: %d %q", code, msg)
	}
	if topics, err := kadm.NewClient(cl).ListTopics(ctx); err != nil || !topics.Has("browse") || topics.Has("made") {
		t.Errorf("topics after refused actions: %v %v", topics.Names(), err)
	}
}

// TestConsoleAPIActions: with spool.console.write=true the console creates, configures and
// deletes topics and resets an Empty group's offsets (earliest, latest, a timestamp, an
// offset) through the broker's own paths, which a Kafka client then sees; a group with a
// member is refused; actions without the console header, from another origin or with a bad
// body are refused.
func TestConsoleAPIActions(t *testing.T) {
	heavy(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"spool.metrics.listener": "127.0.0.1:0",
		"spool.console.write": "true", "group.initial.rebalance.delay.ms": "0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ProducerLinger(0), kgo.DefaultProduceTopic("acted"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	create := consoleCall{method: "POST", path: "/console/api/topics", body: map[string]any{"name": "acted", "partitions": 2, "configs": map[string]string{"retention.ms": "60000"}}}
	if code, msg := create.do(t, b, nil); code != 200 {
		t.Fatalf("create: %d %s", code, msg)
	}
	if code, msg := create.do(t, b, nil); code != 409 || !strings.Contains(msg, "acted") {
		t.Errorf("creating it again: %d %s, want 409", code, msg)
	}
	details, err := adm.ListTopics(ctx, "acted")
	if err != nil || len(details["acted"].Partitions) != 2 {
		t.Fatalf("the created topic as a client sees it: %+v %v", details, err)
	}
	for _, c := range []consoleCall{
		{method: "POST", path: "/console/api/topics", body: `{"name":`},
		{method: "POST", path: "/console/api/topics", body: `{"name":"x","bogus":1}`},
		{method: "POST", path: "/console/api/topics", body: `{}`},
		{method: "POST", path: "/console/api/topics", body: map[string]any{"name": "bad/name"}},
		{method: "POST", path: "/console/api/topics", body: map[string]any{"name": "badcfg", "configs": map[string]string{"retention.ms": "soon"}}},
		{method: "POST", path: "/console/api/topics/acted/configs", body: map[string]any{"set": map[string]string{"no.such.config": "1"}}},
		{method: "POST", path: "/console/api/topics/acted/configs", body: map[string]any{}},
		{method: "POST", path: "/console/api/groups/g/offsets", body: map[string]any{"to": "yesterday"}},
	} {
		if code, msg := c.do(t, b, nil); code != 400 {
			t.Errorf("%s %s %v: %d %s, want 400", c.method, c.path, c.body, code, msg)
		}
	}
	// CSRF: the console header is required, and a foreign Origin is refused.
	if code, msg := (consoleCall{method: "DELETE", path: "/console/api/topics/acted", noHeader: true}).do(t, b, nil); code != 403 || !strings.Contains(msg, "X-Spool-Console") {
		t.Errorf("an action without the console header: %d %s", code, msg)
	}
	if code, msg := (consoleCall{method: "DELETE", path: "/console/api/topics/acted", origin: "http://evil.example"}).do(t, b, nil); code != 403 || !strings.Contains(msg, "cross-origin") {
		t.Errorf("an action from another origin: %d %s", code, msg)
	}

	if code, msg := (consoleCall{method: "POST", path: "/console/api/topics/acted/configs",
		body: map[string]any{"set": map[string]string{"max.message.bytes": "200000"}, "delete": []string{"retention.ms"}}}).do(t, b, nil); code != 200 {
		t.Fatalf("altering configs: %d %s", code, msg)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "acted")
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, c := range rcs[0].Configs {
		seen = seen || c.Key == "max.message.bytes"
		if c.Key == "max.message.bytes" && (c.Value == nil || *c.Value != "200000") {
			t.Errorf("max.message.bytes is %v after the console set it to 200000", c.MaybeValue())
		}
		if c.Key == "retention.ms" && c.Source.String() == "DYNAMIC_TOPIC_CONFIG" {
			t.Errorf("retention.ms is still overridden after the console deleted it: %v", c.MaybeValue())
		}
	}
	if !seen {
		t.Errorf("DescribeConfigs of acted lacks max.message.bytes: %+v", rcs[0].Configs)
	}

	// Offsets: 10 records with timestamps a minute apart on each partition.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for p := range int32(2) {
		for i := range 10 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("x"), Timestamp: base.Add(time.Duration(i) * time.Minute)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	member, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup("resetters"), kgo.ConsumeTopics("acted"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 20; {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	reset := func(body map[string]any) (int, string) {
		return (consoleCall{method: "POST", path: "/console/api/groups/resetters/offsets", body: body}).do(t, b, nil)
	}
	if code, msg := reset(map[string]any{"to": "earliest"}); code != 409 || !strings.Contains(msg, "Stable") || !strings.Contains(msg, "1 members") {
		t.Errorf("resetting a group with a member: %d %q, want 409 naming its state", code, msg)
	}
	member.Close() // leaves the group
	committed := func() map[int32]int64 {
		t.Helper()
		os, err := adm.FetchOffsets(ctx, "resetters")
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.Topic == "acted" {
				out[o.Partition] = o.At
			}
		})
		return out
	}
	if c := committed(); c[0] != 10 || c[1] != 10 {
		t.Fatalf("committed before the resets: %v", c)
	}
	for _, step := range []struct {
		body map[string]any
		want int64
	}{
		{map[string]any{"to": "earliest"}, 0},
		{map[string]any{"to": "offset", "offset": 4}, 4},
		{map[string]any{"to": "offset", "offset": 400}, 10}, // clamped to the end
		{map[string]any{"to": "timestamp", "timestamp": base.Add(6*time.Minute - time.Second).UnixMilli()}, 6},
		{map[string]any{"to": "latest", "topics": []string{"acted"}}, 10},
	} {
		var res struct {
			Offsets []struct {
				Partition        int32
				Previous, Offset int64
			}
		}
		code, msg := (consoleCall{method: "POST", path: "/console/api/groups/resetters/offsets", body: step.body}).do(t, b, &res)
		if code != 200 || len(res.Offsets) != 2 {
			t.Fatalf("reset %v: %d %s %+v", step.body, code, msg, res)
		}
		if c := committed(); c[0] != step.want || c[1] != step.want {
			t.Errorf("after reset %v a client reads committed offsets %v, want %d on both", step.body, c, step.want)
		}
	}
	if code, msg := reset(map[string]any{"to": "earliest", "topics": []string{"nosuch"}}); code != 404 {
		t.Errorf("resetting an unknown topic: %d %s", code, msg)
	}

	if code, msg := (consoleCall{method: "DELETE", path: "/console/api/topics/__consumer_offsets"}).do(t, b, nil); code != 400 {
		t.Errorf("deleting __consumer_offsets: %d %s, want 400", code, msg)
	}
	if code, msg := (consoleCall{method: "DELETE", path: "/console/api/topics/acted"}).do(t, b, nil); code != 200 {
		t.Fatalf("delete: %d %s", code, msg)
	}
	if topics, err := adm.ListTopics(ctx); err != nil || topics.Has("acted") {
		t.Errorf("the deleted topic is still listed: %v %v", topics.Names(), err)
	}
	if code, msg := (consoleCall{method: "DELETE", path: "/console/api/topics/acted"}).do(t, b, nil); code != 404 {
		t.Errorf("deleting it again: %d %s, want 404", code, msg)
	}
}

// TestConsoleAPISignIn: with SASL users the console asks for them (401 without or with a wrong
// password), accepts PLAIN users and SCRAM users (whose password is checked against the stored
// key), and decides every read and action by the ACLs as that principal (403 naming the right).
func TestConsoleAPISignIn(t *testing.T) {
	heavy(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": aclJAAS,
		"authorizer.class.name":                               "kafka.security.authorizer.AclAuthorizer",
		"super.users":                                         "User:admin",
		"auto.create.topics.enable":                           "false",
		"spool.metrics.listener":                              "127.0.0.1:0",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := aclClient(t, b, "admin")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "secret"); err != nil {
		t.Fatal(err)
	}
	if err := produceTo(admin, "secret", "classified"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	// carol's credential is in place once she can sign in over SASL.
	brokertest.WaitFor(t, 10*time.Second, "carol signs in over SASL/SCRAM", func() bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT")), kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism()))
		if err != nil {
			return false
		}
		defer cl.Close()
		return cl.Ping(ctx) == nil
	})

	records := "/console/api/topics/secret/partitions/0/records"
	for _, c := range []consoleCall{
		{path: records},
		{path: records, user: "alice", pass: "guess"},
		{path: records, user: "mallory", pass: "alice-secret"},
		{path: records, user: "carol", pass: "guess"},
		{path: "/console/api/state"},
		{method: "POST", path: "/console/api/topics", body: map[string]any{"name": "x"}},
	} {
		if code, msg := c.do(t, b, nil); code != 401 || !strings.Contains(msg, "sign") {
			t.Errorf("%s %s as %q/%q: %d %q, want 401", c.method, c.path, c.user, c.pass, code, msg)
		}
	}
	var got browsed
	if code, msg := (consoleCall{path: records, user: "admin", pass: "admin-secret"}).do(t, b, &got); code != 200 || strings.Join(got.values(), "") != "classified" {
		t.Errorf("admin browsing: %d %s %+v", code, msg, got)
	}
	for _, user := range []string{"alice", "carol"} {
		code, msg := (consoleCall{path: records, user: user, pass: user + "-secret"}).do(t, b, nil)
		if code != 403 || !strings.Contains(msg, "User:"+user+" needs Read on Topic secret") {
			t.Errorf("%s browsing without Read: %d %q", user, code, msg)
		}
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:carol").Topics("secret").Operations(kadm.OpRead))
	brokertest.WaitFor(t, 10*time.Second, "carol may browse once her ACL is loaded", func() bool {
		code, _ := (consoleCall{path: records, user: "carol", pass: "carol-secret"}).do(t, b, &got)
		return code == 200
	})
	if strings.Join(got.values(), "") != "classified" {
		t.Errorf("carol (SCRAM) browsing with Read: %+v", got)
	}
	// The overview lists only what the principal may describe.
	var st struct {
		Topics []struct{ Name string }
	}
	if code, msg := (consoleCall{path: "/console/api/state", user: "alice", pass: "alice-secret"}).do(t, b, &st); code != 200 || len(st.Topics) != 0 {
		t.Errorf("alice's overview: %d %s %+v, want no topics", code, msg, st)
	}
	if code, msg := (consoleCall{path: "/console/api/state", user: "carol", pass: "carol-secret"}).do(t, b, &st); code != 200 || len(st.Topics) != 1 || st.Topics[0].Name != "secret" {
		t.Errorf("carol's overview: %d %s %+v, want topic secret", code, msg, st)
	}
	// Actions as the ACLs say: carol may not delete, create or reset; admin may.
	for _, c := range []consoleCall{
		{method: "DELETE", path: "/console/api/topics/secret"},
		{method: "POST", path: "/console/api/topics", body: map[string]any{"name": "carols"}},
		{method: "POST", path: "/console/api/topics/secret/configs", body: map[string]any{"set": map[string]string{"retention.ms": "1000"}}},
		{method: "POST", path: "/console/api/groups/g/offsets", body: map[string]any{"to": "earliest", "topics": []string{"secret"}}},
	} {
		c.user, c.pass = "carol", "carol-secret"
		if code, msg := c.do(t, b, nil); code != 403 || !strings.Contains(msg, "User:carol needs") {
			t.Errorf("carol %s %s: %d %q, want 403", c.method, c.path, code, msg)
		}
	}
	if code, msg := (consoleCall{method: "POST", path: "/console/api/groups/g/offsets", user: "admin", pass: "admin-secret",
		body: map[string]any{"to": "latest", "topics": []string{"secret"}}}).do(t, b, nil); code != 200 {
		t.Errorf("admin resetting group g: %d %s", code, msg)
	}
	if os, err := adm.FetchOffsets(ctx, "g"); err != nil || os["secret"][0].At != 1 {
		t.Errorf("group g after admin's reset to latest: %+v %v", os, err)
	}
	// Security listing: Describe on the cluster.
	var sec struct {
		Principal string
		Write     bool
		ACLs      []struct{ Principal, Operation, ResourceName string }
		ACLsError string
		Users     []struct {
			Name       string
			Mechanisms []string
		}
		UsersError string
	}
	if code, msg := (consoleCall{path: "/console/api/security", user: "carol", pass: "carol-secret"}).do(t, b, &sec); code != 200 ||
		sec.Principal != "User:carol" || !sec.Write || len(sec.ACLs) != 0 || sec.ACLsError == "" || sec.UsersError == "" {
		t.Errorf("carol's security page: %d %s %+v", code, msg, sec)
	}
	if code, msg := (consoleCall{path: "/console/api/security", user: "admin", pass: "admin-secret"}).do(t, b, &sec); code != 200 || len(sec.ACLs) != 1 ||
		sec.ACLs[0].Principal != "User:carol" || sec.ACLs[0].Operation != "Read" || len(sec.Users) != 4 {
		t.Errorf("admin's security page: %d %s %+v", code, msg, sec)
	}
	for _, u := range sec.Users {
		want := "PLAIN"
		if u.Name == "carol" {
			want = "SCRAM-SHA-256 (4096 iterations)"
		}
		if strings.Join(u.Mechanisms, ",") != want {
			t.Errorf("user %s mechanisms %v, want %s", u.Name, u.Mechanisms, want)
		}
	}
}
