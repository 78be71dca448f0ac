package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8"

	"github.com/hangar-mcp/hangar/internal/source"
	"github.com/hangar-mcp/hangar/internal/testutil"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
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

// fakeTerminal is a terminal of 100 by 40 characters that writes each frame
// to w.
type fakeTerminal struct {
	w   io.Writer
	buf bytes.Buffer
}

func (f *fakeTerminal) Write(p []byte) (int, error)                 { return f.buf.Write(p) }
func (f *fakeTerminal) ReadFrom(r io.Reader) (int64, error)         { return f.buf.ReadFrom(r) }
func (f *fakeTerminal) IsTerminal() bool                            { return true }
func (f *fakeTerminal) GetTermSize() (width, height int, err error) { return 100, 40, nil }
func (f *fakeTerminal) Flush(int) error {
	_, err := f.w.Write(f.buf.Bytes())
	f.buf.Reset()
	return err
}

// TestStartProgress: a cold start lists the plugin (in the interpreter),
// starts serving, and then logs the progress of the compilation in the
// background, and "ready" once it is done.
func TestStartProgress(t *testing.T) {
	isolate(t)
	defer func(i, q time.Duration) { progressInterval, progressQuiet = i, q }(progressInterval, progressQuiet)
	progressInterval, progressQuiet = 100*time.Millisecond, 0

	wasm := testutil.BuildPlugin(t, "./internal/testplugins/legacy")
	ctx, cancel := context.WithCancel(context.Background())
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--http", "127.0.0.1:0", "--cache-dir", t.TempDir(), wasm},
			&Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr})
	}()
	stopped := false
	defer func() { // before the variables are restored
		cancel()
		if !stopped {
			<-done
		}
	}()
	// A cold compilation under the race detector on a busy machine takes
	// minutes.
	deadline := time.Now().Add(10 * time.Minute)
	for !strings.Contains(stderr.String(), "msg=ready") {
		select {
		case code := <-done:
			stopped = true
			t.Fatalf("serve ended (%d) before it was ready:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ready:\n%s", stderr.String())
		}
	}
	cancel()
	stopped = true
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d:\n%s", code, stderr.String())
	}
	log := stderr.String()
	order := []string{
		"level=INFO msg=\"plugins listed; serving\"",
		"level=INFO msg=\"compiling plugins\" ready=0 total=1 compiling=[",
		"level=INFO msg=\"compiled into the cache\" plugin=",
		"starts=\"on its first call\"",
		"level=INFO msg=ready plugins=1 started=0 on_first_call=1 ",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(log[at:], want)
		if i < 0 {
			t.Fatalf("the log lacks %q after offset %d:\n%s", want, at, log)
		}
		at += i + len(want)
	}
}

// TestProgressBars: on a terminal, the start draws a bar of the plugins
// loaded and one per download, and log lines go above them.
func TestProgressBars(t *testing.T) {
	defer func(c func(io.Writer) mpb.ContainerOption) { barConsole = c }(barConsole)
	barConsole = func(w io.Writer) mpb.ContainerOption { return mpb.WithConsoleWriter(&fakeTerminal{w: w}) }
	var out lockedBuffer
	pw := &progressWriter{w: &out}
	log := slog.New(slog.NewTextHandler(pw, nil))
	p := newProgress(log, pw, 2, true)
	dl := p.download("remote")
	dl(source.Progress{Source: "https://example.com/p.wasm", Total: 4 << 20})
	dl(source.Progress{Source: "https://example.com/p.wasm", Done: 2 << 20, Total: 4 << 20})
	dl(source.Progress{Source: "https://example.com/p.wasm", Done: 4 << 20, Total: 4 << 20, Finished: true})
	p.compileStarted("remote")
	log.Info("a line above the bars")
	p.compileEnded("remote", nil, "compiled")
	p.pluginDone()
	p.pluginDone()
	// Wait for a frame showing both plugins loaded.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "2/2") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	p.close()
	log.Info("a line after the bars")
	drawn := out.String()
	for _, want := range []string{"loading plugins", "2/2", "downloading remote", "4.0 MiB", "a line above the bars", "a line after the bars"} {
		if !strings.Contains(drawn, want) {
			t.Errorf("the terminal lacks %q:\n%q", want, drawn)
		}
	}
}

// TestDownloadProgressLines: without a terminal, a download logs its start,
// its progress every progressInterval, and its end.
func TestDownloadProgressLines(t *testing.T) {
	defer func(i time.Duration) { progressInterval = i }(progressInterval)
	progressInterval = time.Nanosecond
	var out lockedBuffer
	pw := &progressWriter{w: &out}
	p := newProgress(slog.New(slog.NewTextHandler(pw, nil)), pw, 1, false)
	defer p.close()
	dl := p.download("remote")
	dl(source.Progress{Source: "oci://r/p:1", Total: -1})
	dl(source.Progress{Source: "oci://r/p:1", Done: 100, Total: -1})
	dl(source.Progress{Source: "oci://r/p:1", Done: 200, Total: -1, Finished: true})
	logged := out.String()
	for _, want := range []string{
		"msg=downloading plugin=remote source=oci://r/p:1 bytes=unknown",
		"msg=downloading plugin=remote received=100 bytes=unknown",
		"msg=downloaded plugin=remote bytes=200",
	} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log lacks %q:\n%s", want, logged)
		}
	}
}
