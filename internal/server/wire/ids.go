package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Request ids as the go-sdk reads them: those it would not answer as they
// came are refused, byte for byte, by every edge.

// RefuseID returns the answer that refuses the JSON-RPC request b, a
// valid JSON object, if its id is one the go-sdk would not answer as it
// came (BadID); else nil. The edges check with it the requests they read
// as the go-sdk does (not on their quick reading).
func RefuseID(b []byte) []byte {
	id := RawID(b)
	if e := BadID(id); e != nil {
		return EncodeRawError(id, e)
	}
	return nil
}

// BadID returns the error that refuses a request id, raw, that the go-sdk
// would not answer as it came: a number that is not an integer of at most
// 2^53 in magnitude. MCP's RequestId is a string or an integer; JSON
// numbers beyond 2^53 do not round-trip through most JSON implementations
// (RFC 7493, 2.2). It returns nil for any other id (absent, null, a
// string, such an integer).
func BadID(id json.RawMessage) *jsonrpc.Error {
	if len(id) == 0 || id[0] == '"' || id[0] == 'n' || ExactID(id) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("Invalid Request: id %s cannot be answered as it came: use a string or an integer between -2^53 and 2^53", id)}
}

// EncodeRawError encodes an error response under a raw id, as it came
// (nil: null).
func EncodeRawError(id json.RawMessage, e *jsonrpc.Error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e})
	return b
}

// RawID returns the raw value of the "id" member of the valid JSON object
// b (the last one, if there are several, as the decoders read them), or
// nil.
func RawID(b []byte) json.RawMessage {
	var members map[string]json.RawMessage
	if json.Unmarshal(b, &members) != nil {
		return nil
	}
	return members["id"]
}

// ExactID reports whether the JSON number n is an integer of magnitude at
// most 2^53, which the go-sdk (through a float64, then an int64) keeps
// exactly. It reads the digits, never the float: 2^53+1 and 1.5 are not.
func ExactID(n []byte) bool {
	s := string(n)
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	mant, exp := s, 0
	if i := bytes.IndexAny(n, "eE"); i >= 0 {
		mant = string(n[:i])
		if mant != "" && mant[0] == '-' {
			mant = mant[1:]
		}
		e := string(n[i+1:])
		if len(e) > 6 {
			return allZero(mant) // a huge exponent: only zero is small
		}
		var err error
		if exp, err = strconv.Atoi(e); err != nil {
			return false
		}
	}
	intPart, frac, _ := bytesCut(mant, '.')
	digits := intPart + frac
	exp -= len(frac)
	// Strip leading zeros, then trailing zeros into the exponent.
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return true // zero
	}
	if exp < 0 || len(digits)+exp > 16 {
		return false // a fraction, or more than 2^53 has digits
	}
	for range exp {
		digits += "0"
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	return err == nil && v <= 1<<53
}

func allZero(s string) bool {
	for _, c := range s {
		if c != '0' && c != '.' {
			return false
		}
	}
	return true
}

func bytesCut(s string, sep byte) (before, after string, found bool) {
	if i := bytes.IndexByte([]byte(s), sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}
