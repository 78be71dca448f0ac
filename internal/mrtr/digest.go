package mrtr

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The members of a request's params that are not part of what the request
// asks: a retry changes them.
var unbound = []string{"_meta", "inputResponses", "requestState"}

// ParamsDigest returns the SHA-256 digest that binds a requestState to
// the parameters of its request: of the canonical JSON (see Canonical) of
// params without the members _meta, inputResponses and requestState, and
// without members whose value is null (a member sent as null is a member
// not sent). params must be a JSON object, or empty or null for none.
func ParamsDigest(params json.RawMessage) ([32]byte, error) {
	obj, err := paramsObject(params)
	if err != nil {
		return [32]byte{}, err
	}
	for _, k := range unbound {
		delete(obj, k)
	}
	for k, v := range obj {
		if v == nil {
			delete(obj, k)
		}
	}
	var b bytes.Buffer
	writeCanonical(&b, obj)
	return sha256.Sum256(b.Bytes()), nil
}

// paramsObject decodes params, a JSON object (or nothing), with numbers
// kept as their text.
func paramsObject(params json.RawMessage) (map[string]any, error) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(p)
	if err != nil {
		return nil, fmt.Errorf("%w: params are not valid JSON: %v", ErrInvalidParams, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: params must be a JSON object", ErrInvalidParams)
	}
	return obj, nil
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

// Canonical returns the canonical form of the JSON value b: the same bytes
// for every serialization of the same value, whatever its key order,
// whitespace, string escapes and number formatting. Objects have their
// members sorted by key (bytes of the UTF-8), a key given twice keeps its
// last value (as encoding/json decodes it), strings are written by
// encoding/json without HTML escaping, and numbers are written exactly,
// in scientific notation with their significant digits only (1, 1.0,
// 10e-1 and 0.1e1 are all "1e0", 12.30 is "1.23e1", -0 is "0"): no number is rounded through a float.
func Canonical(b json.RawMessage) ([]byte, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	writeCanonical(&out, v)
	return out.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		b.WriteString(canonicalNumber(string(v)))
	case string:
		writeString(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, v[k])
		}
		b.WriteByte('}')
	}
}

func writeString(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)         // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// canonicalNumber writes the JSON number n (valid, as the decoder checked)
// in scientific notation, [-]D[.DDD]e[-]X, with its significant digits
// only (no leading or trailing zero); zero is "0". A number whose exponent
// is beyond ±10^15 is left as it was written.
func canonicalNumber(n string) string {
	neg := strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	mant, exp := n, int64(0)
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		mant = n[:i]
		x, err := strconv.ParseInt(strings.TrimPrefix(n[i+1:], "+"), 10, 64)
		if err != nil || x > 1e15 || x < -1e15 {
			return n
		}
		exp = x
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	exp -= int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	// The exponent of the first digit, as in 1.23e4: shifts with the
	// number of digits, so that it is the same for every writing.
	exp += int64(len(trimmed) - 1)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(trimmed[:1])
	if len(trimmed) > 1 {
		b.WriteByte('.')
		b.WriteString(trimmed[1:])
	}
	b.WriteByte('e')
	b.WriteString(strconv.FormatInt(exp, 10))
	return b.String()
}
