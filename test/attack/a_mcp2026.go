package main

// Issue 18, MCP 2026-07-28: bad input at the stateless edge (18.5) and
// attacks on requestState (18.2). Each attack serves the mrtr test plugin
// (whose ask tool elicits a name in the middle of its execution; the
// attacked one, 8 instances), a copy of it for a well-behaved client
// (prefix g) and the flood plugin; it counts the attacked plugin's
// executions (/metrics), and runs a well-behaved 2026 client beside the
// attacker (bystander) that must lose nothing.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	register(
		&attack{
			id: "18.5.1", name: "mcp26-meta-headers",
			attempt: "2026 requests with _meta missing or incomplete (no protocolVersion, no clientCapabilities, capabilities a string) or contradicted by the headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name missing, other, malformed Base64), to a tool that elicits",
			run:     meta2026,
		},
		&attack{
			id: "18.5.2", name: "mcp26-unknown-version",
			attempt: "Requests (tools/call, server/discover) for protocol version 2099-01-01 in _meta and header",
			run:     unknownVersion2026,
		},
		&attack{
			id: "18.5.3", name: "mcp26-answers-no-state",
			attempt: "tools/call with inputResponses but no requestState, an empty one or one of the wrong type, and inputResponses that are not an object",
			run:     responsesWithoutState,
		},
		&attack{
			id: "18.5.4", name: "mcp26-unrequested-keys",
			attempt: "Retries of a parked call whose inputResponses carry keys never requested: beside the requested answer, and instead of it",
			run:     unrequestedKeys,
		},
		&attack{
			id: "18.5.5", name: "mcp26-wrong-answers",
			attempt: "Retries of a parked elicitation with answers of the wrong type: a sampling result, a roots result, a string, action \"maybe\", content against the requested schema, no content",
			run:     wrongAnswers,
		},
		&attack{
			id: "18.5.6", name: "mcp26-session-id",
			attempt: "2026 requests carrying Mcp-Session-Id (a 2025 client's live session, a made-up one), and GET and DELETE with the 2026 header and that live session's ID",
			run:     sessionID2026,
		},
		&attack{
			id: "18.2.1", name: "mcp26-state-tampered",
			attempt: "Retries of a parked call with its requestState changed (a character at the start, middle and end; the unused bits of the last one), truncated, extended, replaced by garbage, or sealed by another Hangar (its own key)",
			run:     stateTampered,
		},
		&attack{
			id: "18.2.2", name: "mcp26-state-expired",
			attempt: "A retry after the park timeout (2 s) has expired the state (item 5's retry after expiry)",
			run:     stateExpired,
		},
		&attack{
			id: "18.2.3", name: "mcp26-state-replayed",
			attempt: "A completed retry sent again; 8 retries of one parked call with one requestState at once",
			run:     stateReplayed,
		},
		&attack{
			id: "18.2.4", name: "mcp26-state-principal",
			attempt: "Static bearer tokens: bob retries alice's parked call with her requestState and his own answer",
			run:     statePrincipal,
		},
		&attack{
			id: "18.2.5", name: "mcp26-state-request",
			attempt: "A parked tools/call's requestState presented with other arguments, for another tool, and with prompts/get and resources/read",
			run:     stateOtherRequest,
		},
	)
}

// serve26 serves the attacked plugin (mrtr, 8 instances, or limits), the
// bystander's (good, prefix g) and flood, with /metrics on a listener of
// its own; http is added to the http section, top to the configuration.
func (a *A) serve26(http, top, limits string) *proc {
	if limits == "" {
		limits = "{max_instances: 8}"
	}
	return a.serve(nil, "--config", a.config(fmt.Sprintf(`http:
  addr: 127.0.0.1:0
%smetrics:
  addr: 127.0.0.1:0
%splugins:
  - {name: mrtr, path: %s, limits: %s}
  - {name: good, path: %s, prefix: g, limits: {max_instances: 4}}
  - {name: flood, path: %s}
`, http, top, a.env.mrtr, limits, a.env.mrtr, a.env.flood)))
}

const (
	keyVersion = "io.modelcontextprotocol/protocolVersion"
	keyCaps    = "io.modelcontextprotocol/clientCapabilities"
)

func meta2026(a *A) {
	p := a.serve26("", "", "")
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	before := a.seen(p, by)
	ask := callArgs("ask", map[string]any{"message": "m"})
	without := func(key string) map[string]any { m := defaultMeta(); delete(m, key); return m }
	with := func(key string, v any) map[string]any { m := defaultMeta(); m[key] = v; return m }
	type refusal struct {
		what  string
		r     r26
		codes []int // the codes the revision allows (two MUSTs meet for a request without a version)
	}
	cases := []refusal{
		{"no _meta", r26{method: "tools/call", params: ask, noMeta: true}, []int{-32602, -32020}},
		{"_meta without protocolVersion", r26{method: "tools/call", params: ask, meta: without(keyVersion)}, []int{-32602, -32020}},
		{"_meta without clientCapabilities", r26{method: "tools/call", params: ask, meta: without(keyCaps)}, []int{-32602}},
		{"clientCapabilities a string", r26{method: "tools/call", params: ask, meta: with(keyCaps, "all")}, []int{-32602}},
		{"_meta 2026-07-28, header 2025-11-25", r26{method: "tools/call", params: ask, header: map[string]string{"Mcp-Protocol-Version": "2025-11-25"}}, []int{-32020}},
		{"no MCP-Protocol-Version header", r26{method: "tools/call", params: ask, header: map[string]string{"Mcp-Protocol-Version": ""}}, []int{-32020}},
		{"no Mcp-Method header", r26{method: "tools/call", params: ask, header: map[string]string{"Mcp-Method": ""}}, []int{-32020}},
		{"Mcp-Method tools/list on a tools/call", r26{method: "tools/call", params: ask, header: map[string]string{"Mcp-Method": "tools/list"}}, []int{-32020}},
		{"no Mcp-Name header", r26{method: "tools/call", params: ask, header: map[string]string{"Mcp-Name": ""}}, []int{-32020}},
		{"Mcp-Name of another tool", r26{method: "tools/call", params: ask, header: map[string]string{"Mcp-Name": "echo"}}, []int{-32020}},
		{"Mcp-Name of another tool in Base64", r26{method: "tools/call", params: ask, header: map[string]string{"Mcp-Name": b64("echo")}}, []int{-32020}},
		{"Mcp-Name malformed Base64", r26{method: "tools/call", params: ask, header: map[string]string{"Mcp-Name": "=?base64?a$k=?="}}, []int{-32020}},
		{"Mcp-Name on tools/list naming a tool", r26{method: "tools/list", header: map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "ask"}}, []int{-32020}},
	}
	var seen []string
	for _, cs := range cases {
		ans := c.do(cs.r)
		ok := ans.err == nil && slices.Contains(cs.codes, ans.code()) && ans.status == http.StatusBadRequest
		a.Check(ok, "%s: %v; want HTTP 400 and error %v", cs.what, ans, cs.codes)
		seen = append(seen, fmt.Sprintf("%s: %d", cs.what, ans.code()))
	}
	a.Figure("refusals", "%s", strings.Join(seen, "; "))
	a.nothingRan(p, by, before, "the 13 refused requests")
	// The same tool named in the sentinel Base64 form is accepted, and
	// the flood plugin's echo is served: the refusals are the headers'.
	ans := c.do(r26{method: "tools/call", params: callArgs("echo", map[string]any{"text": "b64"}), header: map[string]string{"Mcp-Name": b64("echo")}})
	a.Check(ans.err == nil && ans.resultType() == "complete" && ans.text() == "b64", "Mcp-Name in Base64 of the right tool: %v", ans)
	by.finish()
	a.Result("%d malformed or contradictory requests refused with 400 (-32602 or -32020), none reached the plugin", len(cases))
}

func unknownVersion2026(a *A) {
	p := a.serve26("", "", "")
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	before := a.seen(p, by)
	meta := defaultMeta()
	meta[keyVersion] = "2099-01-01"
	for _, method := range []string{"tools/call", "server/discover"} {
		params := map[string]any{}
		if method == "tools/call" {
			params = callArgs("ask", nil)
		}
		ans := c.do(r26{method: method, params: params, meta: meta, header: map[string]string{"Mcp-Protocol-Version": "2099-01-01"}})
		e, _ := ans.msg["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		supported, _ := data["supported"].([]any)
		ok := ans.err == nil && ans.code() == -32022 && ans.status == http.StatusBadRequest &&
			data["requested"] == "2099-01-01" && slices.Contains(supported, any(v2026))
		a.Check(ok, "%s at 2099-01-01: %v; want HTTP 400, -32022 with requested and supported (including %s)", method, ans, v2026)
		a.Figure(method, "%v, supported %v", ans, supported)
	}
	a.nothingRan(p, by, before, "the two requests")
	by.finish()
	a.Result("an unknown version gets 400 and UnsupportedProtocolVersion naming the versions served")
}

func responsesWithoutState(a *A) {
	p := a.serve26("", "", "")
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	before := a.seen(p, by)
	answers := map[string]any{"elicitation-1": accept(map[string]any{"name": "x"})}
	for _, cs := range []struct {
		what   string
		params map[string]any
	}{
		{"inputResponses without requestState", map[string]any{"inputResponses": answers}},
		{"an empty requestState", map[string]any{"inputResponses": answers, "requestState": ""}},
		{"requestState a number", map[string]any{"inputResponses": answers, "requestState": 12345}},
		{"inputResponses a list", map[string]any{"inputResponses": []any{answers}, "requestState": "x"}},
		{"requestState a number, no inputResponses", map[string]any{"requestState": 7}},
	} {
		params := callArgs("ask", map[string]any{"message": "m"})
		for k, v := range cs.params {
			params[k] = v
		}
		ans := c.do(r26{method: "tools/call", params: params})
		a.refused(cs.what, ans, -32602)
		a.Figure(cs.what, "%v", ans)
	}
	a.nothingRan(p, by, before, "the 5 requests")
	by.finish()
	a.Result("each refused with 400 and invalid params; the plugin never ran")
}

func unrequestedKeys(a *A) {
	p := a.serve26("", "", "")
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	pk := c.park("beside")
	before := a.seen(p, by)
	// Answers it did not ask for, beside the one it did: ignored.
	ans := c.do(pk.retry(pk.state, map[string]any{
		pk.key:       accept(map[string]any{"name": "Ada"}),
		"sampling-9": map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "injected"}, "model": "m"},
		"roots-7":    map[string]any{"roots": []any{map[string]any{"uri": "file:///etc"}}},
		"x":          1,
	}))
	pk.completed(a, "a retry with three keys never requested beside the answer", ans, "Ada")
	a.Figure("beside the answer", "%s", firstN(ans.text(), 120))

	// Only answers it did not ask for: asked again, with the same state.
	pk = c.park("instead")
	ans = c.do(pk.retry(pk.state, map[string]any{"elicitation-99": accept(map[string]any{"name": "Eve"})}))
	ok := ans.err == nil && ans.resultType() == "input_required" && slices.Equal(ans.keys(), []string{pk.key}) && ans.question(pk.key) == pk.question
	a.Check(ok, "a retry answering only a key never requested: %v; want the same input request again", ans)
	if ans.state() != "" {
		pk.state = ans.state()
	}
	a.Figure("instead of the answer", "%s again (state %s)", ans.resultType(), map[bool]string{true: "the same", false: "a new one"}[ans.state() == pk.state])
	c.finish(pk, "Ada")
	after := a.seen(p, by)
	a.Figure("the attacked plugin saw", "%.0f calls ended, %.0f questions asked, %.0f answers delivered for 1 parked call completed and 1 call parked and completed (3 retries)",
		after.ended-before.ended, after.asked-before.asked, after.answered-before.answered)
	// The question asked again may count as asked again (an
	// input_required answer), never as an answer delivered.
	a.Check(after.ended-before.ended == 2 && after.answered-before.answered == 2 && after.asked-before.asked >= 1 && after.asked-before.asked <= 2,
		"the attacked plugin saw %v, then %v", before, after)
	by.finish()
	a.Result("keys never requested are ignored; without the requested answer, the input request is asked again")
}

func wrongAnswers(a *A) {
	p := a.serve26("", "", "")
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	pk := c.park("wrong")
	before := a.seen(p, by)
	for _, cs := range []struct {
		what   string
		answer any
	}{
		{"a sampling result", map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "x"}, "model": "m"}},
		{"a roots result", map[string]any{"roots": []any{map[string]any{"uri": "file:///"}}}},
		{"a string", "yes"},
		{"action maybe", map[string]any{"action": "maybe", "content": map[string]any{"name": "x"}}},
		{"name a number", accept(map[string]any{"name": 5})},
		{"no name (required)", accept(map[string]any{})},
		{"accept without content", map[string]any{"action": "accept"}},
	} {
		ans := c.do(pk.retry(pk.state, map[string]any{pk.key: cs.answer}))
		a.refused(cs.what, ans, -32602, pk.key)
		a.Figure(cs.what, "%v", ans)
	}
	a.nothingRan(p, by, before, "the 7 wrong answers")
	// The call is still parked, and its state still good.
	c.finish(pk, "Ada")
	by.finish()
	a.Result("each wrong answer refused with 400 and invalid params naming the key; the call stayed parked and completed with the right one")
}

func sessionID2026(a *A) {
	p := a.serve26("", "", "")
	by := a.bystander(p.url, "")
	// A 2025-11-25 client with a session.
	old, err := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, nil).
		Connect(a.ctx, &mcp.StreamableClientTransport{Endpoint: p.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		a.Fatalf("the 2025 client: %v", err)
	}
	defer old.Close()
	if old.ID() == "" || old.InitializeResult().ProtocolVersion != "2025-11-25" {
		a.Fatalf("the 2025 client: session %q at %s", old.ID(), old.InitializeResult().ProtocolVersion)
	}
	c := a.raw26(p.url, "")
	for _, sid := range []string{old.ID(), "made-up-session"} {
		ans := c.do(r26{method: "tools/call", params: callArgs("echo", map[string]any{"text": "stateless"}), header: map[string]string{"Mcp-Session-Id": sid}})
		a.Check(ans.err == nil && ans.resultType() == "complete" && ans.text() == "stateless" && ans.header.Get("Mcp-Session-Id") == "",
			"a 2026 tools/call with Mcp-Session-Id %q: %v (Mcp-Session-Id %q); want it served as any 2026 request, no session echoed", sid, ans, ans.header.Get("Mcp-Session-Id"))
		// An MRTR call with it: its retry, without the header, completes.
		ans = c.do(r26{method: "tools/call", params: callArgs("ask", map[string]any{"message": "s"}), header: map[string]string{"Mcp-Session-Id": sid}})
		if a.Check(ans.err == nil && ans.resultType() == "input_required" && len(ans.keys()) == 1, "ask with Mcp-Session-Id: %v", ans) {
			pk := &parked{args: map[string]any{"message": "s"}, state: ans.state(), key: ans.keys()[0], question: ans.question(ans.keys()[0])}
			c.finish(pk, "Ada")
		}
	}
	for _, m := range []string{http.MethodDelete, http.MethodGet} {
		ans := c.do(r26{httpMethod: m, header: map[string]string{"Mcp-Session-Id": old.ID(), "Mcp-Method": ""}})
		a.Check(ans.status == http.StatusMethodNotAllowed, "%s with the 2026 header and a live session's ID: %v; want 405", m, ans)
		a.Figure(m+" at 2026", "HTTP %d", ans.status)
	}
	// The 2025 session lost nothing.
	if text, err := callText(a.ctx, old, "echo", map[string]any{"text": "still"}); err != nil || text != "still" {
		a.Errorf("the 2025 session after the 2026 requests with its ID: %q, %v", text, err)
	}
	by.finish()
	a.Result("Mcp-Session-Id is ignored at 2026 (served, none echoed); GET and DELETE get 405 and the session lives")
}

func stateTampered(a *A) {
	p := a.serve26("", "", "")
	other := a.serve26("", "", "") // another Hangar, with a key of its own
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	pk := c.park("tamper")
	foreign := a.raw26(other.url, "").park("tamper")
	before := a.seen(p, by)
	s := pk.state
	cases := []struct{ what, state string }{
		{"first character changed", tamper(s, 0)},
		{"middle character changed", tamper(s, len(s)/2)},
		{"last character changed", tamper(s, -1)},
		{"truncated", s[:len(s)-1]},
		{"extended", s + "A"},
		{"garbage", "this is not a state"},
		{"sealed by another Hangar", foreign.state},
	}
	// The same bytes written otherwise: the last character's unused bits
	// set. A state is accepted only as it was issued.
	if other := paddingBits(s); other != "" {
		cases = append(cases, struct{ what, state string }{"last character's unused bits set", other})
	}
	for _, cs := range cases {
		ans := c.do(pk.retry(cs.state, map[string]any{pk.key: accept(map[string]any{"name": "Eve"})}))
		a.refused(cs.what, ans, -32602, "requestState")
		a.Figure(cs.what, "%v", ans)
	}
	a.nothingRan(p, by, before, fmt.Sprintf("the %d tampered retries", len(cases)))
	c.finish(pk, "Ada")
	by.finish()
	a.Result("every changed or foreign state refused with 400 and invalid params; the call completed with the right state")
}

func stateExpired(a *A) {
	// One instance: the parked call holds it until it expires.
	p := a.serve26("", "mrtr:\n  park_timeout: 2s\n", "{max_instances: 1}")
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	start := time.Now()
	pk := c.park("expire")
	// The park timeout cancels the call (and ends it: one call ended).
	took := a.Until(30*time.Second, "the parked call's expiry", func() bool { return a.metric(p, "hangar_mrtr_expired_total") >= 1 })
	a.Figure("the parked call expired", "%v after it parked (park_timeout 2s)", round(took))
	before := a.seen(p, by)
	a.Sleep(time.Second)
	ans := c.do(pk.answer("Late"))
	a.refused("a retry after the park timeout", ans, -32602, "expired")
	a.Figure("retry after expiry", "%v", ans)
	a.nothingRan(p, by, before, "the late retry")
	// The call was cancelled and its instance returned: a new call gets
	// it at once.
	t := time.Now()
	pk2 := c.park("after")
	a.Figure("a new call parked", "%v after the late retry (the plugin has one instance)", since(t))
	a.Check(time.Since(t) < 5*time.Second, "the plugin's instance was held %v after the expiry", time.Since(start))
	c.finish(pk2, "Ada")
	by.finish()
	a.Result("the late retry was refused (expired) and nothing ran; the expired call's instance served the next call")
}

func stateReplayed(a *A) {
	p := a.serve26("", "", "")
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	pk := c.park("replay")
	c.finish(pk, "Ada")
	before := a.seen(p, by)
	ans := c.do(pk.answer("Ada"))
	a.refused("the completed retry again", ans, -32602, "already used")
	a.Figure("replay", "%v", ans)
	a.nothingRan(p, by, before, "the replay")

	// Eight retries of one parked call at once: exactly one is accepted.
	pk = c.park("race")
	before = a.seen(p, by)
	var wg sync.WaitGroup
	answers := make([]a26, 8)
	for i := range answers {
		wg.Go(func() { answers[i] = c.do(pk.answer(fmt.Sprintf("racer-%d", i))) })
	}
	wg.Wait()
	won, replayed := 0, 0
	for i, ans := range answers {
		switch {
		case ans.resultType() == "complete":
			won++
			pk.completed(a, "the accepted racer", ans, fmt.Sprintf("racer-%d", i))
		case ans.code() == -32602 && strings.Contains(ans.message(), "already used"):
			replayed++
		default:
			a.Errorf("racer %d: %v", i, ans)
		}
	}
	a.Figure("8 racing retries", "%d accepted, %d refused as already used", won, replayed)
	a.Check(won == 1 && replayed == 7, "%d retries accepted of 8", won)
	// The accepted one completed the call: one answer delivered, one call
	// ended; nothing else.
	after := a.seen(p, by)
	d := seen{after.ended - before.ended, after.asked - before.asked, after.answered - before.answered}
	a.Figure("the attacked plugin saw", "%v during the race", d)
	a.Check(d == seen{ended: 1, answered: 1}, "the race: the attacked plugin saw %v, want the one accepted answer", d)
	by.finish()
	a.Result("a state is accepted once: a replay and 7 of 8 racing retries refused, nothing ran for them")
}

func statePrincipal(a *A) {
	dir := a.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	const alice, bob, carol = "alice-0123456789abcdef0123456789abcdef", "bob-0123456789abcdef0123456789abcdef00", "carol-0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("- {id: alice, token: %s, plugins: ['*']}\n- {id: bob, token: %s, plugins: ['*']}\n- {id: carol, token: %s, plugins: ['*']}\n", alice, bob, carol)), 0o600); err != nil {
		a.Fatalf("%v", err)
	}
	p := a.serve26("  auth:\n    tokens_file: "+tokens+"\n", "", "")
	by := a.bystander(p.url, carol)
	ca, cb := a.raw26(p.url, alice), a.raw26(p.url, bob)
	pk := ca.park("alice's")
	before := a.seen(p, by)
	ans := cb.do(pk.answer("Mallory"))
	a.refused("bob's retry with alice's state", ans, -32602, "another user")
	a.Figure("bob with alice's state", "%v", ans)
	// Without a token at all: refused before MCP.
	anon := a.raw26(p.url, "").do(pk.answer("Mallory"))
	a.Check(anon.status == http.StatusUnauthorized, "alice's state without a token: %v; want 401", anon)
	a.nothingRan(p, by, before, "bob's and the anonymous retries")
	ca.finish(pk, "Alice")
	by.finish()
	a.Result("a state presented by another token is refused (invalid params, another user) and nothing ran; alice's call completed")
}

func stateOtherRequest(a *A) {
	p := a.serve26("", "", "")
	by := a.bystander(p.url, "")
	c := a.raw26(p.url, "")
	pk := c.park("mine")
	before := a.seen(p, by)
	answers := map[string]any{pk.key: accept(map[string]any{"name": "Eve"})}
	for _, cs := range []struct {
		what string
		r    r26
	}{
		{"other arguments", r26{method: "tools/call", params: map[string]any{"name": "ask", "arguments": map[string]any{"message": "yours"}, "requestState": pk.state, "inputResponses": answers}}},
		{"no arguments", r26{method: "tools/call", params: map[string]any{"name": "ask", "requestState": pk.state, "inputResponses": answers}}},
		{"another tool", r26{method: "tools/call", params: map[string]any{"name": "sample", "arguments": map[string]any{"prompt": "p"}, "requestState": pk.state, "inputResponses": answers}}},
		{"prompts/get", r26{method: "prompts/get", params: map[string]any{"name": "ask_prompt", "requestState": pk.state, "inputResponses": answers}}},
		{"resources/read", r26{method: "resources/read", params: map[string]any{"uri": "mrtr://ask", "requestState": pk.state, "inputResponses": answers}}},
	} {
		ans := c.do(cs.r)
		a.refused(cs.what, ans, -32602, "another request")
		a.Figure(cs.what, "%v", ans)
	}
	a.nothingRan(p, by, before, "the 5 misdirected retries")
	c.finish(pk, "Ada")
	by.finish()
	a.Result("a state presented for other arguments, another tool or method is refused (invalid params) and nothing ran")
}
