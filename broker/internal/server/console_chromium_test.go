package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// browserTab starts Debian's headless Chromium through chromedp (requests to hosts other
// than 127.0.0.1 fail) and returns a tab and the page's console calls and exceptions so far.
func browserTab(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	chromium := brokertest.NeedTool(t, "/usr/bin/chromium", "chromium")
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1100), chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"))
	var mu sync.Mutex
	var msgs []string
	ctx, cancelTab := chromedp.NewContext(alloc, chromedp.WithListener(func(ev any) {
		var s string
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			s = fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " "))
		case *runtime.EventExceptionThrown:
			s = "exception: " + (&chromedp.ExceptionError{ExceptionDetails: e.ExceptionDetails}).Error()
		default:
			return
		}
		mu.Lock()
		msgs = append(msgs, s)
		mu.Unlock()
	}))
	if err := chromedp.Do(ctx); err != nil { // starts the browser, on a context without a timeout
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string{}, msgs...)
	}
}

// step runs browser actions with a deadline, failing the test with what it was doing.
func step(t *testing.T, tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// pageValue evaluates a JavaScript expression in the page.
func pageValue[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds.
func waitFor(t *testing.T, tab context.Context, what, cond string) {
	t.Helper()
	step(t, tab, what, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(25*time.Second)))
}

// TestConsoleBrowseAndActInChromium drives the console in headless Chromium against a broker
// with SASL users and ACLs: alice signs in, browses a topic's records, filters them by key and
// shows them as JSON; keys, values and headers holding markup are shown as text and run no
// script; her deletion of the topic is refused with the broker's 403 on the page; admin then
// resets an Empty group's offsets from the group page, and a Kafka client sees them moved.
func TestConsoleBrowseAndActInChromium(t *testing.T) {
	heavy(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": aclJAAS,
		"authorizer.class.name":                               "kafka.security.authorizer.AclAuthorizer",
		"super.users":                                         "User:admin",
		"spool.metrics.listener":                              "127.0.0.1:0",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	admin := aclClient(t, b, "admin", kgo.DefaultProduceTopic("web"))
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "web"); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%3)), Value: []byte(fmt.Sprintf(`{"n":%d}`, i))}
		if err := admin.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const (
		hostileKey    = `<script>window.__pwned=1</script>`
		hostileValue  = `<img src=x onerror="window.__pwned=2">`
		hostileHeader = `<svg onload="window.__pwned=3">`
	)
	if err := admin.ProduceSync(ctx, &kgo.Record{Key: []byte(hostileKey), Value: []byte(hostileValue),
		Headers: []kgo.RecordHeader{{Key: `<b onmouseover="window.__pwned=4">`, Value: []byte(hostileHeader)}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "web", Partition: 0, At: 5, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "web-readers", offs); err != nil || resp.Error() != nil {
		t.Fatalf("committing for web-readers: %v %v", err, resp.Error())
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("web").Operations(kadm.OpRead, kadm.OpDescribe))

	tab, messages := browserTab(t)
	base := "http://" + b.MetricsAddr + "/console/"
	step(t, tab, "opening the topic page", chromedp.Navigate(base+"#/topic/web"))
	waitFor(t, tab, "the sign-in form", `!document.getElementById("signin").hidden`)
	signIn := func(user string) {
		t.Helper()
		step(t, tab, "signing in as "+user,
			chromedp.SetValue(chromedp.ID("signin-user"), user), chromedp.SetValue(chromedp.ID("signin-pass"), user+"-secret"),
			chromedp.Click(chromedp.ID("signin-go")))
		waitFor(t, tab, user+" signed in", `(document.getElementById("principal")||{}).textContent === "User:`+user+`"`)
	}
	signIn("alice")

	// Browse from the beginning: seven records, the hostile one as text.
	waitFor(t, tab, "the message browser", `document.getElementById("br-go") !== null`)
	step(t, tab, "browsing", chromedp.Click(chromedp.ID("br-go")))
	waitFor(t, tab, "seven records", `document.querySelectorAll("#records tbody tr").length === 7`)
	if got := pageValue[string](t, tab, `document.querySelector('#records tr[data-offset="6"] td.key').textContent`); got != hostileKey {
		t.Errorf("the hostile key shows as %q, want the text %q", got, hostileKey)
	}
	if got := pageValue[string](t, tab, `document.querySelector('#records tr[data-offset="6"] td.value').textContent`); got != hostileValue {
		t.Errorf("the hostile value shows as %q, want the text %q", got, hostileValue)
	}
	if got := pageValue[string](t, tab, `document.querySelector('#records tr[data-offset="6"] td.headers').textContent`); !strings.Contains(got, hostileHeader) {
		t.Errorf("the hostile header shows as %q, want the text %q", got, hostileHeader)
	}
	if n := pageValue[int](t, tab, `document.querySelectorAll("#records script, #records img, #records svg, #records b").length`); n != 0 {
		t.Errorf("the records table holds %d elements made from record data", n)
	}
	if pwned := pageValue[string](t, tab, `String(window.__pwned)`); pwned != "undefined" {
		t.Errorf("a record's markup ran a script: window.__pwned = %s", pwned)
	}

	// Filter by key, then show as JSON.
	step(t, tab, "filtering by key", chromedp.SetValue(chromedp.ID("br-key"), "k1"), chromedp.Click(chromedp.ID("br-go")))
	waitFor(t, tab, "the records of key k1", `document.querySelectorAll("#records tbody tr").length === 2`)
	if got := pageValue[string](t, tab, `Array.from(document.querySelectorAll("#records tbody td.value")).map((td) => td.textContent).join(" ")`); got != `{"n":1} {"n":4}` {
		t.Errorf("values of key k1: %q", got)
	}
	step(t, tab, "showing as JSON", chromedp.SetValue(chromedp.ID("br-format"), "json"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("br-format").dispatchEvent(new Event("change", {bubbles: true}))`))
	waitFor(t, tab, "pretty JSON", `document.querySelectorAll("#records pre.json").length === 2`)
	if got := pageValue[string](t, tab, `document.querySelector("#records pre.json").textContent`); got != "{\n  \"n\": 1\n}" {
		t.Errorf("the JSON view shows %q", got)
	}

	// alice may not delete the topic: the broker's 403 is shown and the topic stays.
	step(t, tab, "deleting as alice", chromedp.SetValue(chromedp.ID("del-confirm"), "web"), chromedp.Click(chromedp.ID("del-go")))
	waitFor(t, tab, "the refusal", `document.getElementById("flash").dataset.ok === "false"`)
	if got := pageValue[string](t, tab, `document.getElementById("flash").textContent`); !strings.Contains(got, "403") || !strings.Contains(got, "User:alice needs Delete on Topic web") {
		t.Errorf("the refusal reads %q", got)
	}
	if topics, err := adm.ListTopics(ctx); err != nil || !topics.Has("web") {
		t.Fatalf("topic web after alice's refused deletion: %v %v", topics.Names(), err)
	}

	// admin resets the group to the earliest offset from the group page.
	step(t, tab, "signing out", chromedp.Click(chromedp.ID("signout")))
	waitFor(t, tab, "the sign-in form again", `!document.getElementById("signin").hidden`)
	signIn("admin")
	step(t, tab, "opening the group page", chromedp.Navigate(base+"#/group/web-readers"))
	waitFor(t, tab, "the reset form", `document.getElementById("rs-go") !== null`)
	step(t, tab, "resetting to earliest", chromedp.SetValue(chromedp.ID("rs-to"), "earliest"), chromedp.Click(chromedp.ID("rs-go")))
	waitFor(t, tab, "the reset's result", `document.querySelector('#reset-result tr[data-reset="web-0"]') !== null`)
	if got := pageValue[string](t, tab, `document.querySelector('#reset-result tr[data-reset="web-0"]').textContent`); got != "web050" {
		t.Errorf("the reset's row reads %q, want web, 0, before 5, after 0", got)
	}
	os, err := adm.FetchOffsets(ctx, "web-readers")
	if err != nil || os["web"][0].At != 0 {
		t.Errorf("web-readers' offset after the reset, as a Kafka client reads it: %+v %v", os, err)
	}
	if got := pageValue[string](t, tab, `document.getElementById("flash").textContent`); !strings.Contains(got, "done") {
		t.Errorf("the reset's message reads %q", got)
	}
	if msgs := messages(); len(msgs) > 0 {
		t.Errorf("the page logged:\n%s", strings.Join(msgs, "\n"))
	}
}

// TestConsoleActionsOpenInChromium: on a broker without SASL users the console's forms are
// refused with the broker's hint until spool.console.write=true; with it, the Topics page
// creates a topic and the topic page sets a config, which a Kafka client then sees.
func TestConsoleActionsOpenInChromium(t *testing.T) {
	heavy(t)
	for _, write := range []bool{false, true} {
		b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"spool.metrics.listener": "127.0.0.1:0",
			"spool.console.write": fmt.Sprint(write)}})
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		tab, messages := browserTab(t)
		base := "http://" + b.MetricsAddr + "/console/"
		step(t, tab, "opening the topics page", chromedp.Navigate(base+"#/topics"))
		waitFor(t, tab, "the create form", `document.getElementById("create-go") !== null`)
		step(t, tab, "creating a topic", chromedp.SetValue(chromedp.ID("create-name"), "made-in-browser"),
			chromedp.SetValue(chromedp.ID("create-partitions"), "3"), chromedp.Click(chromedp.ID("create-go")))
		waitFor(t, tab, "the outcome", `document.getElementById("flash").dataset.ok !== undefined`)
		flashText := pageValue[string](t, tab, `document.getElementById("flash").textContent`)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		details, err := adm.ListTopics(ctx, "made-in-browser")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !write {
			if !strings.Contains(flashText, "403") || !strings.Contains(flashText, "spool.console.write=true") {
				t.Errorf("a read-only console's refusal reads %q", flashText)
			}
			if details.Has("made-in-browser") && details["made-in-browser"].Err == nil {
				t.Error("a read-only console created a topic")
			}
			if got := pageValue[string](t, tab, `(document.getElementById("who")||{}).textContent`); !strings.Contains(got, "read-only") {
				t.Errorf("the header does not say the console is read-only: %q", got)
			}
			continue
		}
		if !strings.Contains(flashText, "done") || len(details["made-in-browser"].Partitions) != 3 {
			t.Fatalf("creating from the page: %q, and a client sees %+v", flashText, details)
		}
		step(t, tab, "opening the new topic", chromedp.Navigate(base+"#/topic/made-in-browser"))
		waitFor(t, tab, "the config form", `document.getElementById("cfg-set") !== null`)
		step(t, tab, "setting retention.ms", chromedp.SetValue(chromedp.ID("cfg-name"), "retention.ms"),
			chromedp.SetValue(chromedp.ID("cfg-value"), "7200000"), chromedp.Click(chromedp.ID("cfg-set")))
		waitFor(t, tab, "the page showing the override", `document.querySelector("#configs") !== null && document.querySelector("#configs").textContent.includes("7200000")`)
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		rcs, err := adm.DescribeTopicConfigs(ctx, "made-in-browser")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, c := range rcs[0].Configs {
			if c.Key == "retention.ms" {
				got = c.MaybeValue()
			}
		}
		if got != "7200000" {
			t.Errorf("retention.ms after the page set it, as a client reads it: %q", got)
		}
		if msgs := messages(); len(msgs) > 0 {
			t.Errorf("the page logged:\n%s", strings.Join(msgs, "\n"))
		}
	}
}
