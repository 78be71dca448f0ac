package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The extism:host/env module.
//
// Every function Extism's Go SDK v1.7.1 defines there, with the same
// signature, so that every module that links under Extism links under
// Hangar: the kernel's memory functions (served from the instance's kernel,
// kernel.go), config_get, var_get and var_set, http_request and its
// status and headers, get_log_level and log_*. Each is a plain Go function
// that finds its instance in the call's context.
//
// Where Extism's Go SDK panics (and so traps the plugin), these panic with
// the same causes: an argument that is no readable block, a malformed
// HTTP request, a variable store over its limit. They differ from Extism in
// three ways, all on the side of refusing: a result that does not fit in
// the memory is answered with offset 0 (Extism wrote it over the kernel's
// root); http_request checks the plugin's grants on the first URL, every
// redirect and every address connected to (egress.go), and marks every
// request as a plugin's (egress_deploy.go); and the log_*
// messages reach Hangar's log, rate-limited with the plugin's stdout and
// stderr (Extism's Go SDK drops them unless its process-wide level is set,
// which Hangar never did).

// envModule is the module name of Extism's built-in host functions.
const envModule = "extism:host/env"

// Extism's log levels, as get_log_level answers them.
const (
	extismTrace = 0
	extismInfo  = 2
	extismWarn  = 3
	extismError = 4
	extismOff   = math.MaxInt32
)

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// hostFunc is a Go function a guest imports.
type hostFunc struct {
	name            string
	params, results []api.ValueType
	fn              api.GoFunc
}

// instantiateHost instantiates the host module name with fns in rt.
func instantiateHost(ctx context.Context, rt wazero.Runtime, name string, fns []hostFunc) error {
	b := rt.NewHostModuleBuilder(name)
	for _, f := range fns {
		b.NewFunctionBuilder().WithGoFunction(f.fn, f.params, f.results).WithName(f.name).Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// kernelOf returns the Extism memory of the instance whose call ctx is.
func kernelOf(ctx context.Context) *kernel { return instanceFrom(ctx).kernel }

// envFunctions are the functions of extism:host/env for p's instances.
func (p *Plugin) envFunctions() []hostFunc {
	return []hostFunc{
		// The kernel.
		{"alloc", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, s []uint64) {
			s[0] = kernelOf(ctx).alloc(s[0])
		}},
		{"free", []api.ValueType{i64}, nil, func(ctx context.Context, s []uint64) {
			kernelOf(ctx).free(s[0])
		}},
		{"length", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, s []uint64) {
			s[0] = kernelOf(ctx).length(s[0])
		}},
		{"length_unsafe", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, s []uint64) {
			s[0] = kernelOf(ctx).lengthUnsafe(s[0])
		}},
		{"load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(ctx context.Context, s []uint64) {
			s[0] = uint64(kernelOf(ctx).loadU8(s[0]))
		}},
		{"load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, s []uint64) {
			s[0] = kernelOf(ctx).loadU64(s[0])
		}},
		{"store_u8", []api.ValueType{i64, i32}, nil, func(ctx context.Context, s []uint64) {
			kernelOf(ctx).storeU8(s[0], uint32(s[1]))
		}},
		{"store_u64", []api.ValueType{i64, i64}, nil, func(ctx context.Context, s []uint64) {
			kernelOf(ctx).storeU64(s[0], s[1])
		}},
		{"input_load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(ctx context.Context, s []uint64) {
			s[0] = uint64(kernelOf(ctx).inputLoadU8(s[0]))
		}},
		{"input_load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, s []uint64) {
			s[0] = kernelOf(ctx).inputLoadU64(s[0])
		}},
		{"input_set", []api.ValueType{i64, i64}, nil, func(ctx context.Context, s []uint64) {
			kernelOf(ctx).inputSet(s[0], s[1])
		}},
		{"output_set", []api.ValueType{i64, i64}, nil, func(ctx context.Context, s []uint64) {
			kernelOf(ctx).outputSet(s[0], s[1])
		}},
		{"error_set", []api.ValueType{i64}, nil, func(ctx context.Context, s []uint64) {
			kernelOf(ctx).errorSet(s[0])
		}},
		rootField("input_length", rootInputLength),
		rootField("input_offset", rootInputOffset),
		rootField("output_length", rootOutLength),
		rootField("output_offset", rootOutOffset),
		rootField("error_get", rootError),
		rootField("memory_bytes", rootLength),
		{"reset", nil, nil, func(ctx context.Context, _ []uint64) {
			kernelOf(ctx).reset()
		}},

		// The host's.
		{"config_get", []api.ValueType{i64}, []api.ValueType{i64}, p.configGet},
		{"var_get", []api.ValueType{i64}, []api.ValueType{i64}, varGet},
		{"var_set", []api.ValueType{i64, i64}, nil, varSet},
		{"http_request", []api.ValueType{i64, i64}, []api.ValueType{i64}, p.httpRequest},
		{"http_status_code", nil, []api.ValueType{i32}, func(ctx context.Context, s []uint64) {
			s[0] = api.EncodeI32(instanceFrom(ctx).httpStatus)
		}},
		// Response headers are kept only for requests of Hangar's PDK
		// (see httpRequest); for others the answer is "none", as it was in
		// Extism's Go SDK as Hangar configured it.
		{"http_headers", nil, []api.ValueType{i64}, func(ctx context.Context, s []uint64) {
			inst := instanceFrom(ctx)
			s[0] = 0
			if inst.httpHeaders != nil {
				s[0] = inst.kernel.writeBlock(inst.httpHeaders)
			}
		}},
		{"get_log_level", nil, []api.ValueType{i32}, func(ctx context.Context, s []uint64) {
			s[0] = api.EncodeI32(p.logLevel(ctx))
		}},
		p.logFunction("log_trace", slog.LevelDebug),
		p.logFunction("log_debug", slog.LevelDebug),
		p.logFunction("log_info", slog.LevelInfo),
		p.logFunction("log_warn", slog.LevelWarn),
		p.logFunction("log_error", slog.LevelError),
	}
}

// rootField is a function that answers a field of the kernel's root.
func rootField(name string, field uint64) hostFunc {
	return hostFunc{name, nil, []api.ValueType{i64}, func(ctx context.Context, s []uint64) {
		s[0] = kernelOf(ctx).field(field)
	}}
}

// mustRead returns the block at off, and traps when it is not readable.
func mustRead(k *kernel, off uint64, what string) []byte {
	b, err := k.readBlock(off)
	if err != nil {
		panic(fmt.Errorf("failed to read %s from memory: %w", what, err))
	}
	return b
}

// configGet answers the plugin's configuration value of the key at s[0]:
// a new block, or 0 when the key is not set (or its value is empty).
func (p *Plugin) configGet(ctx context.Context, s []uint64) {
	k := kernelOf(ctx)
	name := mustRead(k, s[0], "config name")
	v, ok := p.opts.Config[string(name)]
	if !ok {
		s[0] = 0
		return
	}
	s[0] = k.writeBlock([]byte(v))
}

// varGet answers the variable named at s[0] (freeing the name): a new
// block, or 0 when it is not set (or empty).
func varGet(ctx context.Context, s []uint64) {
	inst := instanceFrom(ctx)
	name := mustRead(inst.kernel, s[0], "var name")
	inst.kernel.free(s[0])
	v, ok := inst.vars[string(name)]
	if !ok {
		s[0] = 0
		return
	}
	s[0] = inst.kernel.writeBlock(v)
}

// varSet sets the variable named at s[0] to the block at s[1], or deletes
// it when s[1] is 0, freeing both blocks. Past the size limit (counted as
// Extism counts it, see varSize) it traps.
func varSet(ctx context.Context, s []uint64) {
	inst := instanceFrom(ctx)
	k := inst.kernel
	name := string(mustRead(k, s[0], "var name"))
	k.free(s[0])
	if s[1] == 0 {
		delete(inst.vars, name)
		return
	}
	value := mustRead(k, s[1], "var value")
	k.free(s[1])
	size := varSize(name, value)
	for n, v := range inst.vars {
		size += varSize(n, v)
	}
	if size >= maxVarBytes {
		panic("Variable store is full")
	}
	inst.vars[name] = value
}

// httpRequest is Extism's http_request: s[0] is the request as JSON
// ({"url", "method"?, "headers"?}), s[1] the body or 0, both freed; the
// answer is the response body, or 0 when it is empty, and the status is
// kept for http_status_code. The request goes through the plugin's own
// client, which checks its grants (egress.go); a request that fails, or is
// refused, traps, as under Extism.
//
// A request with "hangar": 1 (Hangar's Go PDK sends it) is answered
// instead: a failure with status 0 and {"error": message, "denied": bool}
// as the body, so that the plugin's code gets an error it can return (the
// message of a refusal names the grant to add, and Hangar logs it at warn
// as well); a response with its header fields kept for http_headers.
func (p *Plugin) httpRequest(ctx context.Context, s []uint64) {
	inst := instanceFrom(ctx)
	k := inst.kernel
	inst.httpStatus, inst.httpHeaders = 0, nil
	raw := mustRead(k, s[0], "http request")
	k.free(s[0])
	var body []byte
	if s[1] != 0 {
		body = mustRead(k, s[1], "http request body")
		k.free(s[1])
	}
	var r httpMeta
	if err := json.Unmarshal(raw, &r); err != nil {
		panic(fmt.Errorf("invalid http request: %w", err))
	}
	resp, out, err := p.sendHTTP(ctx, &r, body)
	if err != nil {
		if r.Hangar != 1 {
			panic(err)
		}
		s[0] = k.writeBlock(p.httpFailure(err))
		return
	}
	inst.httpStatus = int32(resp.StatusCode)
	if r.Hangar == 1 {
		inst.httpHeaders = responseHeaders(resp.Header)
	}
	s[0] = k.writeBlock(out)
}

// httpMeta is http_request's request. Hangar is Hangar's own: see
// httpRequest.
type httpMeta struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Method  string            `json:"method"`
	Hangar  int               `json:"hangar"`
}

// sendHTTP sends the plugin's request r with body, and returns the response
// (its body closed) and its body, read whole within the plugin's memory.
func (p *Plugin) sendHTTP(ctx context.Context, r *httpMeta, body []byte) (*http.Response, []byte, error) {
	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodGet
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid url: %w", err)
	}
	if u.Host == "" {
		return nil, nil, errors.New("invalid url: it has no host; a request needs an absolute http:// or https:// URL")
	}
	host := strings.ToLower(u.Hostname())
	if !hostAllowed(p.opts.Grants.AllowedHosts, host) {
		return nil, nil, &hostDeniedError{plugin: p.name, host: host, why: notGranted}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, rd)
	if err != nil {
		return nil, nil, err
	}
	for name, v := range r.Headers {
		if isMarker(name) {
			return nil, nil, &hostDeniedError{plugin: p.name, host: host, why: markerSet}
		}
		req.Header.Set(name, v)
	}
	resp, err := p.httpClient().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	limit := min(int64(p.opts.Limits.MemoryPages)*pageSize, maxHTTPResponse)
	out, err := io.ReadAll(http.MaxBytesReader(nil, resp.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, nil, &tooLargeError{method: method, url: withoutQuery(u), limit: limit, memory: limit < maxHTTPResponse}
	}
	if err != nil {
		return nil, nil, err
	}
	return resp, out, nil
}

// tooLargeError is a response body larger than the plugin may read: its
// memory limit, or maxHTTPResponse.
type tooLargeError struct {
	method, url string // url without its query, which may hold a key
	limit       int64
	memory      bool // the limit is the plugin's memory's
	bare        bool // without the method and URL (httpFailure)
}

func (e *tooLargeError) Error() string {
	var b strings.Builder
	if !e.bare {
		b.WriteString(e.method + " " + e.url + ": ")
	}
	fmt.Fprintf(&b, "the response body is larger than %d bytes", e.limit)
	if e.memory {
		b.WriteString(", what the plugin's memory (limits.memory) allows")
	} else {
		b.WriteString(", the most Hangar reads of a response")
	}
	return b.String()
}

// guest is e as the PDK is told it: without the method and URL, which the
// PDK puts before the message.
func (e *tooLargeError) guest() error {
	g := *e
	g.bare = true
	return &g
}

// withoutQuery is u without its query and fragment, and its password
// redacted.
func withoutQuery(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = "", false, "", ""
	return c.Redacted()
}

// httpFailure is the answer to a failed request of Hangar's PDK; a refusal
// is also logged. The PDK puts the method and URL before the message, so
// it is the failure's without them (url.Error's, which would repeat the
// URL with its query); and it does not tell the plugin the configured
// ranges of Hangar's deployment, which the log names.
func (p *Plugin) httpFailure(err error) []byte {
	var hd *hostDeniedError
	denied := errors.As(err, &hd)
	if denied && limiterFor(p.log).allow() {
		p.log.Warn(hd.Error(), "source", "http_request")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var big *tooLargeError
	if errors.As(err, &big) {
		err = big.guest()
	}
	msg := err.Error()
	if denied {
		guest := *hd
		guest.guest = true
		msg = strings.Replace(msg, hd.Error(), guest.Error(), 1)
	}
	b, _ := json.Marshal(struct {
		Error  string `json:"error"`
		Denied bool   `json:"denied"`
	}{msg, denied})
	return b
}

// responseHeaders encodes h as http_headers answers it: an object of
// strings, the values of a field sent several times joined with ", ".
func responseHeaders(h http.Header) []byte {
	m := make(map[string]string, len(h))
	for name, vs := range h {
		m[name] = strings.Join(vs, ", ")
	}
	b, _ := json.Marshal(m)
	return b
}

// logLevel is get_log_level's answer: the lowest level Hangar's log takes
// from the plugin.
func (p *Plugin) logLevel(ctx context.Context) int32 {
	switch {
	case p.log.Enabled(ctx, slog.LevelDebug):
		return extismTrace
	case p.log.Enabled(ctx, slog.LevelInfo):
		return extismInfo
	case p.log.Enabled(ctx, slog.LevelWarn):
		return extismWarn
	case p.log.Enabled(ctx, slog.LevelError):
		return extismError
	}
	return extismOff
}

// logFunction is a log_* function: it logs the message at s[0] at level,
// if Hangar's log takes that level, within the plugin's log rate limit (see
// logwriter.go), and frees it.
func (p *Plugin) logFunction(name string, level slog.Level) hostFunc {
	return hostFunc{name, []api.ValueType{i64}, nil, func(ctx context.Context, s []uint64) {
		k := kernelOf(ctx)
		if p.log.Enabled(ctx, level) {
			msg := mustRead(k, s[0], "log message")
			if len(msg) > maxLogLine {
				msg = msg[:maxLogLine]
			}
			if limiterFor(p.log).allow() {
				p.log.Log(context.Background(), level, string(bytes.ToValidUTF8(msg, []byte("\uFFFD"))), "source", "plugin")
			}
		}
		k.free(s[0])
	}}
}
