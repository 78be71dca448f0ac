package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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
	}
	fmt.Fprintf(os.Stderr, "bench: unknown server mode %q\n", mode)
	return 2
}

// echoArgs are the arguments of the native echo tool, the same as the
// plugins' inputSchema: {"text": string}, required.
type echoArgs struct {
	Text string `json:"text"`
}

// serveNative is the ceiling (a): a go-sdk server whose echo tool is Go
// code, with the transport options Hangar uses, so that the difference to
// Hangar is the cost of hosting the tool in a plugin.
func serveNative(args []string) error {
	fs := flag.NewFlagSet("native", flag.ContinueOnError)
	addr := fs.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	cpu := fs.String("cpuprofile", "", "write a CPU profile here")
	mem := fs.String("memprofile", "", "write an allocation profile here")
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
// cmd/hangar) inside this binary with a CPU profile running, and writes the
// CPU and allocation profiles when it returns (on SIGTERM, or at the end of
// stdin for stdio).
//
//	bench -serve hangar -cpuprofile F -memprofile F -- serve ...
func serveProfiled(args []string) int {
	fs := flag.NewFlagSet("hangar", flag.ContinueOnError)
	cpu := fs.String("cpuprofile", "", "write a CPU profile here")
	mem := fs.String("memprofile", "", "write an allocation profile here")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	stop, err := startProfiles(*cpu, *mem)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := cli.Main(context.Background(), fs.Args(), &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// startProfiles starts a CPU profile (if cpu is set); the returned stop
// ends it and writes the allocation profile (if mem is set).
func startProfiles(cpu, mem string) (stop func() error, err error) {
	var f *os.File
	if cpu != "" {
		if f, err = os.Create(cpu); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() error {
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
		}
		if mem == "" {
			return nil
		}
		runtime.GC()
		m, err := os.Create(mem)
		if err != nil {
			return err
		}
		defer m.Close()
		return pprof.Lookup("allocs").WriteTo(m, 0)
	}, nil
}
