package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runProfile runs Hangar (the code of cmd/hangar, inside this binary),
// drives it like a throughput cell (or, with -profile-2026, like a
// stateless cell), profiles its measured window (CPU and
// allocations; the warm-up and the start are left out), and writes
// cpu.pprof, allocs.pprof and text summaries to the profile directory,
// among them cpu-split.txt, the CPU time of a call divided among the parts
// it goes through (splitProfile).
func runProfile(ctx context.Context, e *env) error {
	o := e.o
	dir, err := filepath.Abs(o.profileDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "allocs.pprof")
	var argv []string
	plugin := ""
	switch o.profileTarget {
	case "native":
		argv = []string{e.self, "-serve", "native", "-cpuprofile", cpu, "-memprofile", mem}
	case "go", "wat":
		plugin = e.goEcho
		if o.profileTarget == "wat" {
			plugin = e.watEcho
		}
		// Compile once so that the profile shows serving, not compiling.
		if err := runCmd(ctx, e.root, nil, e.hangar, "inspect", "--cache-dir", e.cache, plugin); err != nil {
			return err
		}
		argv = []string{e.self, "-serve", "hangar", "-cpuprofile", cpu, "-memprofile", mem, "--", "serve", "--cache-dir", e.cache}
	default:
		return fmt.Errorf("-profile-plugin: want go, wat or native, not %q", o.profileTarget)
	}
	if o.profileModern && plugin == "" {
		return fmt.Errorf("-profile-2026: the native server (a) does not speak %s", modernVersion)
	}
	c := o.profileC
	var r cell
	switch o.profileTransport {
	case "http":
		if plugin != "" {
			argv = append(argv, "--http", "127.0.0.1:0", plugin)
		} else {
			argv = append(argv, "-http", "127.0.0.1:0")
		}
		p, err := e.startHTTP(ctx, "profile", argv)
		if err != nil {
			return err
		}
		if plugin != "" {
			// Serving, not loading: every plugin loaded first.
			if err := p.waitReady(ctx); err != nil {
				p.stop()
				return err
			}
		}
		spec := echoSpec("echo")
		spec.window = signalWindow(p.pid())
		if o.profileModern {
			r = driveCalls(ctx, p.pid(), c, spec, o.warmup, o.duration, modernCallers(p.url, spec))
			p.stop()
			break
		}
		ss, err := openSessions(ctx, p.url, c)
		if err != nil {
			p.stop()
			return err
		}
		r = drive(ctx, p.pid(), ss, c, spec, o.warmup, o.duration)
		closeSessions(ss)
		p.stop()
	case "stdio":
		if plugin != "" {
			argv = append(argv, "--log-level", "info", plugin)
		}
		s, err := e.startStdio(ctx, "profile", argv)
		if err != nil {
			return err
		}
		if plugin != "" {
			if err := waitLogReady(ctx, s.log, 3*time.Minute); err != nil {
				s.stop()
				return err
			}
		}
		spec := echoSpec("echo")
		spec.window = signalWindow(s.pid())
		callers := sessionCallers([]*mcp.ClientSession{s.session}, spec)
		if o.profileModern {
			callers = modernLineCallers([]*mcp.ClientSession{s.session}, spec)
		}
		r = driveCalls(ctx, s.pid(), c, spec, o.warmup, o.duration, callers)
		s.stop()
	default:
		return fmt.Errorf("-profile-transport: want http or stdio, not %q", o.profileTransport)
	}
	era := "2025-11-25 sessions"
	if o.profileModern {
		era = modernVersion + " stateless"
	}
	logf("profiled %s plugin over %s (%s) at C=%d: %.0f calls/s, p50 %.2f ms, p99 %.2f ms, errors %d %s",
		o.profileTarget, o.profileTransport, era, c, r.Throughput, r.P50, r.P99, r.Errors, r.FirstError)
	if r.Calls == 0 {
		return fmt.Errorf("no call completed in the measured window: a longer -duration, or -warmup, may help")
	}
	for _, s := range []struct {
		file, out string
		args      []string
	}{
		{cpu, "cpu-top.txt", []string{"-top", "-nodecount=60"}},
		{cpu, "cpu-cum.txt", []string{"-top", "-cum", "-nodecount=80"}},
		{mem, "allocs-space.txt", []string{"-top", "-sample_index=alloc_space", "-nodecount=50", "-base", mem + ".base"}},
		{mem, "allocs-objects.txt", []string{"-top", "-sample_index=alloc_objects", "-nodecount=50", "-base", mem + ".base"}},
	} {
		cmd := exec.CommandContext(ctx, e.gobin, append(append([]string{"tool", "pprof"}, s.args...), s.file)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go tool pprof: %v\n%s", err, out)
		}
		if err := os.WriteFile(filepath.Join(dir, s.out), out, 0o644); err != nil {
			return err
		}
	}
	shares, err := splitProfile(ctx, e.gobin, cpu)
	if err != nil {
		return err
	}
	split := splitText(shares, r.ServerCPU)
	if err := os.WriteFile(filepath.Join(dir, "cpu-split.txt"), []byte(split), 0o644); err != nil {
		return err
	}
	fmt.Print(split)
	fmt.Printf("calls profiled: %d (%.0f calls/s)\nprofiles in %s: cpu.pprof, allocs.pprof, cpu-top.txt, cpu-cum.txt, cpu-split.txt, allocs-space.txt, allocs-objects.txt\n", r.Calls, r.Throughput, dir)
	fmt.Printf("explore with: go tool pprof -http 127.0.0.1:0 %s\n", cpu)
	return nil
}
