package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// A driver is a program that drives one SDK client on behalf of the suite, speaking JSON
// lines on its standard input and output (DRIVERS.md): one request object per line in, one
// response object per line out, in order. Each client-level case starts as many driver
// processes as it needs clients.

// Request is one command to a driver.
type Request struct {
	ID  int64  `json:"id"`
	Cmd string `json:"cmd"` // open, produce, consume, poll, commit, assignment, close

	// open
	Bootstrap   string   `json:"bootstrap,omitempty"`
	Acks        string   `json:"acks,omitempty"`        // "0", "1", "all" (default all)
	Idempotent  *bool    `json:"idempotent,omitempty"`  // default: the SDK's default
	Compression string   `json:"compression,omitempty"` // none, gzip, snappy, lz4, zstd
	Partitioner string   `json:"partitioner,omitempty"` // "default" (murmur2 for keys) or "manual"
	Group       string   `json:"group,omitempty"`       // group id: subscribe to Topics as a member
	Topics      []string `json:"topics,omitempty"`
	// SessionTimeoutMs is the group session timeout (default: the SDK's).
	SessionTimeoutMs int `json:"session_timeout_ms,omitempty"`
	// Balancer is the one assignor the member offers: range, roundrobin or
	// cooperative-sticky (default: the SDK's choice).
	Balancer string `json:"balancer,omitempty"`
	// Config holds librdkafka's keys of a secured target (security.protocol,
	// ssl.ca.location, ssl.certificate.location, ssl.key.location, sasl.mechanisms,
	// sasl.username, sasl.password, ...), for the client to speak TLS and SASL; a driver of
	// another client maps them to its own (the Java client's: DRIVERS.md).
	Config map[string]string `json:"config,omitempty"`

	// produce
	Records []DriverRecord `json:"records,omitempty"`

	// consume (assign the partitions of Topic from FromOffset; -2 is the start) and poll (group)
	Topic      string `json:"topic,omitempty"`
	FromOffset int64  `json:"from_offset,omitempty"`
	Count      int    `json:"count,omitempty"`
	TimeoutMs  int    `json:"timeout_ms,omitempty"`
	// Partitions is how many partitions Topic has (consume), for SDKs that cannot look it
	// up; the suite fills it in for the topics it created.
	Partitions int32 `json:"partitions,omitempty"`
}

// Response is a driver's answer to one Request.
type Response struct {
	ID    int64  `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Unsupported (with ok false) says the SDK cannot do the request at all, and why: the
	// case is reported as skipped with that reason, not failed.
	Unsupported string `json:"unsupported,omitempty"`
	// produce: one result per record, in request order
	Results []ProduceResult `json:"results,omitempty"`
	// consume, poll
	Records []DriverRecord `json:"records,omitempty"`
	// open: the SDK's name, for the report
	Client string `json:"client,omitempty"`
	// assignment: the partitions the group member owns, by topic, and every partition it has
	// had revoked (or lost) so far
	Assignment map[string][]int32 `json:"assignment,omitempty"`
	Revoked    map[string][]int32 `json:"revoked,omitempty"`
}

// DriverRecord is a record in either direction. Key and Value are base64 in JSON, null for
// a null key or value.
type DriverRecord struct {
	Topic       string         `json:"topic"`
	Partition   int32          `json:"partition"` // produce: -1 lets the partitioner choose
	Offset      int64          `json:"offset,omitempty"`
	Key         []byte         `json:"key"`
	Value       []byte         `json:"value"`
	Headers     []DriverHeader `json:"headers,omitempty"`
	TimestampMs int64          `json:"timestamp_ms,omitempty"` // produce: 0 is now
}

// DriverHeader is a record header; Value is null for a null value.
type DriverHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// ProduceResult is where a produced record landed, or why it did not.
type ProduceResult struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error,omitempty"`
}

// Driver starts driver sessions, one per client.
type Driver interface {
	Name() string
	Start(ctx context.Context) (*Session, error)
}

// ProcessDriver runs a driver program.
type ProcessDriver struct {
	DriverName string
	Path       string
	Args       []string
	Env        []string // added to the environment
}

// Name is the driver's name.
func (d *ProcessDriver) Name() string { return d.DriverName }

// Start starts one driver process.
func (d *ProcessDriver) Start(ctx context.Context) (*Session, error) {
	cmd := exec.Command(d.Path, d.Args...)
	cmd.Env = append(os.Environ(), d.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", d.DriverName, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", d.DriverName, err)
	}
	s := &Session{name: d.DriverName, cmd: cmd, in: stdin, out: bufio.NewReaderSize(stdout, 1<<20), done: make(chan struct{})}
	cmd.Stderr = &s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting driver %s: %w", d.DriverName, err)
	}
	go func() { s.waitErr = cmd.Wait(); close(s.done) }()
	return s, nil
}

// Session is one running driver process: one client.
type Session struct {
	name    string
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	stderr  lockedBuffer
	done    chan struct{}
	waitErr error
	nextID  int64
	killed  bool
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Call sends req and waits for its response. A response with ok false is returned with an
// error carrying the driver's message.
func (s *Session) Call(ctx context.Context, req Request) (*Response, error) {
	s.nextID++
	req.ID = s.nextID
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("driver %s: encoding %s: %w", s.name, req.Cmd, err)
	}
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("driver %s: sending %s: %w (stderr: %s)", s.name, req.Cmd, err, tailString(s.stderr.String(), 2000))
	}
	type answer struct {
		resp *Response
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		b, err := s.out.ReadBytes('\n')
		if err != nil {
			ch <- answer{err: err}
			return
		}
		var r Response
		if err := json.Unmarshal(b, &r); err != nil {
			ch <- answer{err: fmt.Errorf("bad response line %q: %w", tailString(string(b), 300), err)}
			return
		}
		ch <- answer{resp: &r}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, fmt.Errorf("driver %s: %s: %w (stderr: %s)", s.name, req.Cmd, a.err, tailString(s.stderr.String(), 2000))
		}
		if a.resp.ID != req.ID {
			return nil, fmt.Errorf("driver %s: %s: response id %d, want %d", s.name, req.Cmd, a.resp.ID, req.ID)
		}
		if !a.resp.OK && a.resp.Unsupported != "" {
			return a.resp, &UnsupportedError{Driver: s.name, Cmd: req.Cmd, Reason: a.resp.Unsupported}
		}
		if !a.resp.OK {
			return a.resp, fmt.Errorf("driver %s: %s: %s", s.name, req.Cmd, a.resp.Error)
		}
		return a.resp, nil
	case <-ctx.Done():
		s.Kill()
		return nil, fmt.Errorf("driver %s: %s: %w", s.name, req.Cmd, ctx.Err())
	}
}

// Close ends the session: closes the driver's input, which makes it close its client and exit.
func (s *Session) Close() error {
	s.in.Close()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.Kill()
		return fmt.Errorf("driver %s did not exit within 30s of its input closing", s.name)
	}
	if s.waitErr != nil && !s.killed {
		return fmt.Errorf("driver %s: %w (stderr: %s)", s.name, s.waitErr, tailString(s.stderr.String(), 2000))
	}
	return nil
}

// Kill ends the driver process at once, as a crash.
func (s *Session) Kill() {
	s.killed = true
	s.cmd.Process.Kill()
	<-s.done
}

func tailString(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// UnsupportedError is a driver's answer that its SDK cannot do a request at all.
type UnsupportedError struct {
	Driver, Cmd, Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("driver %s does not support %s: %s", e.Driver, e.Cmd, e.Reason)
}

// errNoDriver is returned for client-level helpers without a driver.
var errNoDriver = errors.New("no driver")

// Client starts a driver session and opens a client with open's settings (its Cmd and
// Bootstrap are filled in). The session is closed when the case ends.
func (t *T) Client(open Request) *Session {
	if t.driver == nil {
		t.Fatalf("%v", errNoDriver)
	}
	s, err := t.driver.Start(t.Ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("%v", err)
		}
	})
	open.Cmd, open.Bootstrap = "open", t.Bootstrap
	if len(t.security) > 0 {
		open.Config = t.security
	}
	t.Call(s, open)
	return s
}

// Call runs one driver command, failing the case on error and skipping it when the driver
// says its SDK cannot do the command. A consume of a topic the case created carries the
// topic's partition count.
func (t *T) Call(s *Session, req Request) *Response {
	if req.Cmd == "consume" && req.Partitions == 0 {
		t.mu.Lock()
		req.Partitions = t.partitions[req.Topic]
		t.mu.Unlock()
	}
	r, err := s.Call(t.Ctx, req)
	var unsupported *UnsupportedError
	if errors.As(err, &unsupported) {
		t.Skipf("%s", unsupported.Error())
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	return r
}
