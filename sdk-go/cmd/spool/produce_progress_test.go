package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestProduceProgressOnTerminal: a long produce from stdin with stderr on a terminal (a
// pseudo-terminal from script(1)) redraws one progress line in place (records, bytes, rates),
// then clears it for the summary. The run is made long by the test holding stdin (a FIFO)
// open: it waits until the line shows every record written so far, then writes the rest.
func TestProduceProgressOnTerminal(t *testing.T) {
	t.Parallel()
	script := brokertest.NeedTool(t, "/usr/bin/script", "bsdutils")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	fifo := filepath.Join(t.TempDir(), "records")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmdline := fmt.Sprintf("%s --brokers %s produce --topic progress < %s", bin, addr, fifo)
	cmd := exec.CommandContext(ctx, script, "-qfec", cmdline, "/dev/null")
	cmd.Env = append(os.Environ(), "SPOOL_CONFIG="+os.DevNull)
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // until the shell opens it for spool's stdin
	if err != nil {
		t.Fatal(err)
	}
	write := func(from, to int) {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "record-%06d\n", i) // 13 bytes each
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			t.Fatal(err)
		}
	}
	text := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	write(0, 1000)
	line := regexp.MustCompile(`\r\x1b\[Kproduced 1000 records, 13\.0 KB, \d+ rec/s, [0-9.]+ (B|KB)/s, \d+(\.\d)?s`)
	brokertest.WaitFor(t, 30*time.Second, "a progress line with the 1000 records", func() bool { return line.MatchString(text()) })
	write(1000, 1500)
	w.Close()
	err = cmd.Wait()
	pw.Close()
	<-copied
	s := text()
	if err != nil {
		t.Fatalf("produce: %v\n%q", err, s)
	}
	// The line is cleared, then the summary (the terminal turns \n into \r\n).
	if !strings.HasSuffix(s, "\r\x1b[Kproduced 1500 records\r\n") {
		t.Errorf("the progress line is not cleared before the summary:\n%q", s)
	}
}

// TestProduceNoProgressWhenPiped: with stderr a pipe, produce writes its summary and nothing
// else, however long it runs: the progress is only made for a terminal.
func TestProduceNoProgressWhenPiped(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, stderr := range map[string]io.Writer{"a pipe": w, "a buffer": &bytes.Buffer{}, "a file": mustCreate(t)} {
		if p := newProduceProgress(stderr); p != nil {
			t.Errorf("a progress for %s", name)
		}
	}
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	var in strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&in, "record-%06d\n", i)
	}
	res := runCLI(t, addr, in.String(), "produce", "--topic", "piped")
	if res.code != 0 || res.stderr != "produced 5000 records\n" {
		t.Errorf("exit %d, stderr %q; want 0 and only the summary", res.code, res.stderr)
	}
}

func mustCreate(t *testing.T) *os.File {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
