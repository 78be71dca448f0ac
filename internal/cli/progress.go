package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/hangar-mcp/hangar/internal/source"
)

// The progress of serve's start.
//
// Downloads and compilations can take seconds each. On a terminal (stderr
// is one, of a known width, and the log level shows INFO) serve draws progress bars on
// stderr, with mpb: one for the plugins loaded out of all, and one per
// download under way; log lines are printed above the bars. Otherwise the
// same progress is logged: a line when a download starts and ends, and
// every progressInterval a line per download and one for the plugins still
// compiling, once a compilation has run for progressQuiet. Nothing goes to
// stdout, the stdio transport.

// progressInterval is the time between two progress lines; tests shorten it.
var progressInterval = 2 * time.Second

// progressQuiet is how long a compilation runs before its progress is
// logged, so that a warm start logs none.
var progressQuiet = time.Second

// barConsole is where bars are drawn: on w, a terminal. Tests replace it.
var barConsole = func(w io.Writer) mpb.ContainerOption { return mpb.WithOutput(w) }

// progress reports the downloads and compilations of a start.
type progress struct {
	log *slog.Logger
	out *progressWriter // the log's writer
	bar *mpb.Progress   // nil when logging

	mu        sync.Mutex
	started   time.Time
	total     int                  // plugins to load
	ready     int                  // plugins loaded or failed
	compiling map[string]time.Time // plugin -> when its compilation started
	loaded    *mpb.Bar
	stop      chan struct{}
	stopped   bool
	wg        sync.WaitGroup
}

// progressWriter is the writer of serve's log: stderr, or, while bars are
// drawn, the bars' container, which prints lines above them.
type progressWriter struct {
	mu  sync.Mutex
	w   io.Writer
	bar *mpb.Progress
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.bar != nil {
		if n, err := pw.bar.Write(b); err == nil {
			return n, nil
		}
	}
	return pw.w.Write(b)
}

// canDrawBars reports whether w is a terminal that bars can be drawn on:
// one that reports its width. A pseudo-terminal whose size was never set
// (some CI runners and editors make one) reports 0x0, where bars draw
// nothing; progress is logged there instead.
func canDrawBars(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false
	}
	width, _, err := term.GetSize(int(f.Fd()))
	return err == nil && width > 0
}

// newProgress returns the progress of loading total plugins, logged to log
// (whose writer is out), or drawn as bars on out's terminal when bars.
func newProgress(log *slog.Logger, out *progressWriter, total int, bars bool) *progress {
	p := &progress{log: log, out: out, started: time.Now(), total: total, compiling: map[string]time.Time{}, stop: make(chan struct{})}
	if bars {
		p.bar = mpb.New(barConsole(out.w), mpb.WithWidth(32), mpb.WithRefreshRate(150*time.Millisecond))
		p.loaded = p.bar.AddBar(int64(total),
			mpb.BarPriority(1<<30), // last
			mpb.PrependDecorators(decor.Name("loading plugins "), decor.CountersNoUnit("%d/%d")),
			mpb.AppendDecorators(decor.Any(p.compilingNames, decor.WCSyncSpaceR), decor.Elapsed(decor.ET_STYLE_GO)),
		)
		out.mu.Lock()
		out.bar = p.bar
		out.mu.Unlock()
		return p
	}
	p.wg.Go(p.tick)
	return p
}

// compilingNames decorates the bar with the plugins being compiled.
func (p *progress) compilingNames(decor.Statistics) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := p.compilingLocked()
	if len(names) == 0 {
		return ""
	}
	if len(names) > 3 {
		names = append(names[:3], "…")
	}
	s := "compiling"
	for _, n := range names {
		s += " " + n
	}
	return s + " "
}

func (p *progress) compilingLocked() []string {
	names := make([]string, 0, len(p.compiling))
	for n := range p.compiling {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// tick logs the compilations under way every progressInterval, once one
// has run for progressQuiet.
func (p *progress) tick() {
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.mu.Lock()
			long := false
			for _, since := range p.compiling {
				long = long || now.Sub(since) >= progressQuiet
			}
			names := p.compilingLocked()
			ready, total := p.ready, p.total
			p.mu.Unlock()
			if long {
				p.log.Info("compiling plugins", "ready", ready, "total", total, "compiling", names, "elapsed", now.Sub(p.started).Round(100*time.Millisecond))
			}
		}
	}
}

// compileStarted records that plugin's compilation began.
func (p *progress) compileStarted(plugin string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.compiling[plugin] = time.Now()
}

// compileEnded records that plugin's compilation ended, and logs msg and
// attrs (what became of the plugin) with how long it took: at INFO when it
// was long enough to have shown progress.
func (p *progress) compileEnded(plugin string, err error, msg string, attrs ...any) {
	p.mu.Lock()
	since, ok := p.compiling[plugin]
	delete(p.compiling, plugin)
	p.mu.Unlock()
	if !ok || err != nil {
		return
	}
	elapsed := time.Since(since)
	level := slog.LevelDebug
	if elapsed >= progressQuiet {
		level = slog.LevelInfo
	}
	p.log.Log(context.Background(), level, msg, append([]any{"plugin", plugin}, append(attrs, "elapsed", elapsed.Round(time.Millisecond))...)...)
}

// pluginDone counts a plugin loaded or failed.
func (p *progress) pluginDone() {
	p.mu.Lock()
	p.ready++
	n := p.ready
	p.mu.Unlock()
	// Not under p.mu: the bar's decorators take it while drawing.
	if p.loaded != nil {
		p.loaded.SetCurrent(int64(n))
	}
}

// download returns the progress function for the downloads of plugin.
func (p *progress) download(plugin string) func(source.Progress) {
	if p.bar != nil {
		var b *mpb.Bar
		return func(s source.Progress) {
			switch {
			case b == nil && !s.Finished:
				b = p.bar.AddBar(max(s.Total, 0),
					mpb.BarRemoveOnComplete(),
					mpb.PrependDecorators(decor.Name("downloading "+plugin+" "), decor.CountersKibiByte("% .1f / % .1f")),
					mpb.AppendDecorators(decor.Percentage()))
			case b == nil:
			case s.Finished:
				if s.Total < 0 {
					b.SetTotal(-1, true)
				} else if s.Done != s.Total {
					b.Abort(true)
				}
				b.SetCurrent(s.Done)
			default:
				b.SetCurrent(s.Done)
			}
		}
	}
	var start, last time.Time
	return func(s source.Progress) {
		now := time.Now()
		switch {
		case start.IsZero():
			start, last = now, now
			p.log.Info("downloading", "plugin", plugin, "source", s.Source, "bytes", total(s.Total))
		case s.Finished:
			p.log.Info("downloaded", "plugin", plugin, "bytes", s.Done, "elapsed", now.Sub(start).Round(time.Millisecond))
		case now.Sub(last) >= progressInterval:
			last = now
			p.log.Info("downloading", "plugin", plugin, "received", s.Done, "bytes", total(s.Total))
		}
	}
}

// total formats a size that may be unknown.
func total(n int64) any {
	if n < 0 {
		return "unknown"
	}
	return n
}

// close stops the progress display; later log lines go to stderr.
func (p *progress) close() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	close(p.stop)
	p.mu.Unlock()
	p.wg.Wait()
	if p.bar != nil {
		if p.loaded != nil && !p.loaded.Completed() {
			p.loaded.Abort(false)
		}
		p.bar.Shutdown()
		p.out.mu.Lock()
		p.out.bar = nil
		p.out.mu.Unlock()
	}
}
