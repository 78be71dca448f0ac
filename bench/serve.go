package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hangar-mcp/hangar/internal/cli"
)

// serveMode runs one of the hidden server modes of this binary and returns
// the exit code.
func serveMode(mode string, args []string) int {
	switch mode {
	case "native":
		if err := serveNative(args); err != nil {
			fmt.Fprintf(os.Stderr, "native: %v\n", err)
			return 1
		}
		return 0
	case "hangar":
		return serveProfiled(args)
	case "calls":
		if err := serveCalls(args); err != nil {
			fmt.Fprintf(os.Stderr, "calls: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "bench: unknown server mode %q\n", mode)
	return 2
}

// echoArgs are the arguments of the native echo tool, the same as the
// plugins' inputSchema: {"text": string}, required.
type echoArgs struct {
	Text string `json:"text"`
}

// serveNative is (a): a go-sdk server whose echo tool is Go code, with the
// transport options Hangar uses. It is no ceiling for Hangar: Hangar
// answers tools/call on a fast path of its own in front of the go-sdk
// (RATIONALE.md, "Why a fast path in front of the go-sdk?"), which a server
// built on the go-sdk alone does not have. It shows what a server costs
// that the go-sdk serves.
func serveNative(args []string) error {
	fs := flag.NewFlagSet("native", flag.ContinueOnError)
	addr := fs.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	cpu := fs.String("cpuprofile", "", "write a CPU profile of the measured window here")
	mem := fs.String("memprofile", "", "write an allocation profile of the measured window here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopProfiles, err := startProfiles(*cpu, *mem)
	if err != nil {
		return err
	}
	defer stopProfiles()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := mcp.NewServer(&mcp.Implementation{Name: "native-echo", Version: "bench"}, &mcp.ServerOptions{Logger: log})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes arguments.text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *addr == "" {
		err := s.Run(ctx, &mcp.StdioTransport{})
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Logger:                     log,
		EventStore:                 mcp.NewMemoryEventStore(nil),
		DisableLocalhostProtection: true,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// serveProfiled runs the hangar command line (the same code as
// cmd/hangar) inside this binary and profiles the measured window, which
// the driver marks with signals (see startProfiles).
//
//	bench -serve hangar -cpuprofile F -memprofile F -- serve ...
func serveProfiled(args []string) int {
	fs := flag.NewFlagSet("hangar", flag.ContinueOnError)
	cpu := fs.String("cpuprofile", "", "write a CPU profile of the measured window here")
	mem := fs.String("memprofile", "", "write an allocation profile of the measured window here")
	marks := fs.String("mark-calls", "", "A,B: call callgrindMark on reading the A-th and the B-th tools/call request on stdin")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	stop, err := startProfiles(*cpu, *mem)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if *marks != "" {
		// hangar serve reads os.Stdin itself: it becomes a pipe that
		// stdin is copied to, through the markingReader.
		m := &markingReader{r: os.Stdin}
		if _, err := fmt.Sscanf(*marks, "%d,%d", &m.at[0], &m.at[1]); err != nil {
			fmt.Fprintln(os.Stderr, "-mark-calls:", err)
			return 2
		}
		r, w, err := os.Pipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdin = r
		go func() {
			io.Copy(w, m)
			w.Close()
		}()
	}
	code := cli.Main(context.Background(), fs.Args(), &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// The driver marks the measured window of a server of this binary (the
// native server, the profiled Hangar) with signals: windowBegin when it
// begins, windowEnd when it ends.
const (
	windowBegin = syscall.SIGUSR1
	windowEnd   = syscall.SIGUSR2
)

// signalWindow returns a callSpec.window that marks the window of the
// server process pid.
func signalWindow(pid int) func(begin bool) {
	return func(begin bool) {
		sig := windowEnd
		if begin {
			sig = windowBegin
		}
		syscall.Kill(pid, sig)
	}
}

// startProfiles profiles the measured window (see windowBegin): a CPU
// profile of the window to cpu, if set, and to mem, if set, the
// allocations profile at the end of the window, with the profile at its
// beginning as mem+".base" (go tool pprof -base takes the difference).
// Each edge of the window also calls callgrindMark, so that under
// callgrind the window's instructions are a dump of their own. The
// returned stop ends a window still open and reports what failed.
func startProfiles(cpu, mem string) (stop func() error, err error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, windowBegin, windowEnd)
	quit := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var f *os.File
		var errs []error
		open := false
		end := func() {
			if !open {
				return
			}
			open = false
			callgrindMark()
			if f != nil {
				pprof.StopCPUProfile()
				errs = append(errs, f.Close())
				f = nil
			}
			if mem != "" {
				errs = append(errs, writeAllocs(mem))
			}
		}
		for {
			select {
			case sig := <-sigs:
				if sig == windowEnd {
					end()
					continue
				}
				if open {
					continue
				}
				open = true
				if mem != "" {
					errs = append(errs, writeAllocs(mem+".base"))
				}
				if cpu != "" {
					var err error
					if f, err = os.Create(cpu); err == nil {
						if err = pprof.StartCPUProfile(f); err != nil {
							f.Close()
							f = nil
						}
					}
					errs = append(errs, err)
				}
				callgrindMark()
			case <-quit:
				end()
				signal.Stop(sigs)
				done <- errors.Join(errs...)
				return
			}
		}
	}()
	return func() error {
		close(quit)
		return <-done
	}, nil
}

// writeAllocs writes the allocations profile, as of a collection run now.
func writeAllocs(path string) error {
	runtime.GC()
	m, err := os.Create(path)
	if err != nil {
		return err
	}
	defer m.Close()
	return pprof.Lookup("allocs").WriteTo(m, 0)
}

// markingReader passes stdin through and calls callgrindMark when it has
// read the at[0]-th and the at[1]-th tools/call request: with one call at
// a time, the calls in between are exactly those of the window.
type markingReader struct {
	r    io.Reader
	at   [2]int
	seen int
	tail []byte // the end of the last read, which may hold part of a name
}

var toolsCall = []byte(`"tools/call"`)

func (m *markingReader) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if n > 0 {
		buf := append(m.tail, p[:n]...)
		for i := bytes.Index(buf, toolsCall); i >= 0; i = bytes.Index(buf, toolsCall) {
			m.seen++
			if m.seen == m.at[0] || m.seen == m.at[1] {
				callgrindMark()
			}
			buf = buf[i+len(toolsCall):]
		}
		m.tail = append(m.tail[:0], buf[max(0, len(buf)-len(toolsCall)+1):]...)
	}
	return n, err
}
