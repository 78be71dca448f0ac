package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// payload is the text every echo call sends and expects back: a short
// sentence, like the arguments of a typical tool call.
const payload = "The quick brown fox jumps over the lazy dog."

var echoInput = json.RawMessage(`{"text":` + mustJSON(payload) + `}`)

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// callSpec says what each caller calls.
type callSpec struct {
	tool   func(worker int) string
	args   json.RawMessage
	expect string // the text result expected; "" accepts any successful result
	// window, if set, is called when the measured window begins (true) and
	// ends (false): a profiled server is told to profile that window only.
	window func(begin bool)
}

func echoSpec(tool string) callSpec {
	return callSpec{tool: func(int) string { return tool }, args: echoInput, expect: payload}
}

// cell is the result of driving one server at one concurrency.
type cell struct {
	Transport  string  `json:"transport"`
	Target     string  `json:"target"`
	C          int     `json:"c"`
	Calls      int     `json:"calls"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"calls_per_sec"`
	P50        float64 `json:"p50_ms"`
	P90        float64 `json:"p90_ms"`
	P99        float64 `json:"p99_ms"`
	Max        float64 `json:"max_ms"`
	Mean       float64 `json:"mean_ms"`
	// CPU time per call in the measured window, in microseconds: of the
	// server process, and of this process (the load generator).
	ServerCPU float64 `json:"server_cpu_us_per_call"`
	ClientCPU float64 `json:"client_cpu_us_per_call"`
}

// drive runs c callers for warmup+dur. Caller i uses sessions[i %
// len(sessions)]: one session each over HTTP, one shared session over
// stdio. Calls that start during the warm-up are not counted; throughput
// is the calls started (and completed) in the measured window per second.
func drive(ctx context.Context, pid int, sessions []*mcp.ClientSession, c int, spec callSpec, warmup, dur time.Duration) cell {
	start := time.Now().Add(warmup)
	end := start.Add(dur)
	ctx, cancel := context.WithDeadline(ctx, end.Add(time.Minute))
	defer cancel()

	// CPU used by the server and by this process in the measured window.
	var srvCPU, selfCPU time.Duration
	cpuDone := make(chan struct{})
	go func() {
		defer close(cpuDone)
		time.Sleep(time.Until(start))
		if spec.window != nil {
			spec.window(true)
		}
		s0, c0 := procCPU(pid), selfCPUTime()
		time.Sleep(time.Until(end))
		srvCPU, selfCPU = procCPU(pid)-s0, selfCPUTime()-c0
		if spec.window != nil {
			spec.window(false)
		}
	}()

	type result struct {
		lat    []time.Duration
		errors int
		first  error
	}
	results := make([]result, c)
	var wg sync.WaitGroup
	for i := range c {
		wg.Go(func() {
			r := &results[i]
			r.lat = make([]time.Duration, 0, 1024)
			cs := sessions[i%len(sessions)]
			params := &mcp.CallToolParams{Name: spec.tool(i), Arguments: spec.args}
			for {
				t0 := time.Now()
				if !t0.Before(end) || ctx.Err() != nil {
					return
				}
				res, err := cs.CallTool(ctx, params)
				d := time.Since(t0)
				if err == nil {
					err = checkResult(res, spec.expect)
				}
				if t0.Before(start) {
					continue
				}
				if err != nil {
					r.errors++
					if r.first == nil {
						r.first = err
					}
					if ctx.Err() != nil {
						return
					}
					continue
				}
				r.lat = append(r.lat, d)
			}
		})
	}
	wg.Wait()
	<-cpuDone

	var all []time.Duration
	out := cell{C: c, Seconds: dur.Seconds()}
	for _, r := range results {
		all = append(all, r.lat...)
		out.Errors += r.errors
		if r.first != nil && out.FirstError == "" {
			out.FirstError = r.first.Error()
		}
	}
	out.Calls = len(all)
	out.Throughput = float64(out.Calls) / dur.Seconds()
	if len(all) > 0 {
		slices.Sort(all)
		var sum time.Duration
		for _, d := range all {
			sum += d
		}
		out.P50 = ms(quantile(all, 0.50))
		out.P90 = ms(quantile(all, 0.90))
		out.P99 = ms(quantile(all, 0.99))
		out.Max = ms(all[len(all)-1])
		out.Mean = ms(sum / time.Duration(len(all)))
		out.ServerCPU = float64(srvCPU/time.Microsecond) / float64(len(all))
		out.ClientCPU = float64(selfCPU/time.Microsecond) / float64(len(all))
	}
	return out
}

// procCPU is the user+system CPU time a process has used, from
// /proc/PID/stat (in clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may contain spaces: split after it.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * (time.Second / clockTicks)
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func checkResult(res *mcp.CallToolResult, expect string) error {
	if res.IsError {
		return fmt.Errorf("tool error: %s", resultText(res))
	}
	if expect != "" && resultText(res) != expect {
		return fmt.Errorf("unexpected result %q", resultText(res))
	}
	return nil
}

func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if t, ok := res.Content[0].(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

// quantile of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
