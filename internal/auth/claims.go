package auth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// ClaimError is a JWT refused for one of its claims, after its signature
// was found good. It wraps the go-sdk's ErrInvalidToken (HTTP 401).
type ClaimError struct {
	Claim   string // "sub", "exp", "scp", ...
	Problem string // what is wrong with it
	// malformed: missing or of the wrong type, which says that the
	// authorization server writes tokens Hangar cannot use (rather than
	// that the token is for another audience, or expired).
	malformed bool
}

func (e *ClaimError) Error() string {
	return fmt.Sprintf("%v: claim %q: %s", sdkauth.ErrInvalidToken, e.Claim, e.Problem)
}

func (e *ClaimError) Unwrap() error { return sdkauth.ErrInvalidToken }

func claimError(claim, format string, args ...any) *ClaimError {
	return &ClaimError{Claim: claim, Problem: fmt.Sprintf(format, args...)}
}

func malformed(claim, format string, args ...any) *ClaimError {
	return &ClaimError{Claim: claim, Problem: fmt.Sprintf(format, args...), malformed: true}
}

// tokenClaims are the claims of a JWT that Hangar reads, checked.
type tokenClaims struct {
	iss, sub string
	exp      time.Time
	scopes   []string
}

// claims decodes and checks the claims of a JWT whose signature holds:
// iss, aud, exp, nbf and iat (RFC 7519), sub, which every access token must
// carry (RFC 9068), and the scopes, from scope and scp, each of which may
// be a space-separated string (RFC 8693, RFC 9068) or a list of strings (as
// some servers write them).
func (v *jwtVerifier) claims(payload []byte) (*tokenClaims, error) {
	var all map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&all); err != nil || all == nil {
		return nil, invalid("the claims are not a JSON object")
	}
	var c tokenClaims
	var err error
	if c.iss, err = stringClaim(all, "iss"); err != nil {
		return nil, err
	}
	if c.iss != v.issuer {
		return nil, claimError("iss", "wrong issuer %s; want %q", brief(c.iss), v.issuer)
	}
	aud, err := listClaim(all, "aud", "a string or a list of strings")
	if err != nil {
		return nil, err
	}
	if !slices.Contains(aud, v.audience) {
		return nil, claimError("aud", "wrong audience %s; want %q", briefList(aud), v.audience)
	}
	now := v.now()
	exp, ok, err := dateClaim(all, "exp")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, malformed("exp", "missing; a token must expire")
	case !now.Before(exp.Add(leeway)):
		return nil, claimError("exp", "expired at %s", exp.UTC().Format(time.RFC3339))
	}
	c.exp = exp
	if nbf, ok, err := dateClaim(all, "nbf"); err != nil {
		return nil, err
	} else if ok && now.Add(leeway).Before(nbf) {
		return nil, claimError("nbf", "not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	if iat, ok, err := dateClaim(all, "iat"); err != nil {
		return nil, err
	} else if ok && now.Add(leeway).Before(iat) {
		return nil, claimError("iat", "issued in the future (%s)", iat.UTC().Format(time.RFC3339))
	}
	if c.sub, err = stringClaim(all, "sub"); err != nil {
		return nil, err
	}
	if c.sub == "" {
		// Sessions are bound to the identity of the token that opened them:
		// every token without a subject would have the same one, and share
		// the others' sessions.
		return nil, malformed("sub", "missing or empty; Hangar binds each session to its token's subject, so every token must name one (RFC 9068 requires sub)")
	}
	for _, name := range []string{"scope", "scp"} {
		s, err := listClaim(all, name, "a string of space-separated scopes or a list of strings")
		if err != nil {
			return nil, err
		}
		for _, it := range s {
			c.scopes = append(c.scopes, strings.Fields(it)...)
		}
	}
	return &c, nil
}

// jsonType names the JSON type of a value, for errors.
func jsonType(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// stringClaim returns a claim that must be a string, or "" when it is
// absent or null.
func stringClaim(all map[string]json.RawMessage, name string) (string, error) {
	raw, ok := all[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", malformed(name, "want a string, not %s", jsonType(raw))
	}
	return s, nil
}

// listClaim returns a claim that may be a string (one item) or a list of
// strings; nil when it is absent or null.
func listClaim(all map[string]json.RawMessage, name, want string) ([]string, error) {
	raw, ok := all[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, malformed(name, "%v", err)
		}
		return []string{s}, nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, malformed(name, "%v", err)
		}
		out := make([]string, len(items))
		for i, it := range items {
			if err := json.Unmarshal(it, &out[i]); err != nil {
				return nil, malformed(name, "item %d is %s, not a string", i+1, jsonType(it))
			}
		}
		return out, nil
	}
	return nil, malformed(name, "want %s, not %s", want, jsonType(raw))
}

// dateClaim returns a NumericDate claim: seconds since 1970, maybe with a
// fraction.
func dateClaim(all map[string]json.RawMessage, name string) (time.Time, bool, error) {
	raw, ok := all[name]
	if !ok || string(raw) == "null" {
		return time.Time{}, false, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil || jsonType(raw) != "a number" {
		return time.Time{}, false, malformed(name, "want a NumericDate (seconds since 1970), not %s", jsonType(raw))
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || f < 0 || f > 1<<40 {
		return time.Time{}, false, malformed(name, "%s is not a NumericDate (seconds since 1970)", brief(n.String()))
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

// brief quotes a value taken from a token for an error, cut to a length
// that fits a log line.
func brief(s string) string {
	const max = 100
	if len(s) > max {
		return fmt.Sprintf("%q... (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}

func briefList(list []string) string {
	const max = 5
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range list {
		if i == max {
			fmt.Fprintf(&b, " ... (%d in all)", len(list))
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(brief(s))
	}
	b.WriteByte(']')
	return b.String()
}
