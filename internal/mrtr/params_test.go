package mrtr_test

import (
	"encoding/json"
	"testing"

	"github.com/hangar-mcp/hangar/internal/mrtr"
)

// TestParamsExactNames: the Manager reads requestState and
// _meta.progressToken by their exact names, the last of a name given
// twice, as the go-sdk and the edges read params (message.bare in package
// stateless tells it when there are none); a member whose name differs
// in case is another member.
func TestParamsExactNames(t *testing.T) {
	for _, tc := range []struct {
		params string
		state  string
		token  any
	}{
		{`{"requestState":"s","_meta":{"progressToken":"t"}}`, "s", "t"},
		{`{"RequestState":"s","_meta":{"ProgressToken":"t"}}`, "", nil},
		{`{"requestState":"a","requestState":"b","_meta":{"progressToken":1,"progressToken":2}}`, "b", 2.0},
		{`{"requestState":"a","RequestState":"b","_meta":{"progressToken":1,"progresstoken":2}}`, "a", 1.0},
		{`{"request\u0053tate":"e","_meta":{"progress\u0054oken":"e"}}`, "e", "e"},
		{`{"name":"x","arguments":{"t":"a\nb"},"_meta":{"ProgressToken":"t"}}`, "", nil},
	} {
		state, err := mrtr.RequestState(json.RawMessage(tc.params))
		if err != nil || state != tc.state {
			t.Errorf("%s: requestState %q (%v), want %q", tc.params, state, err, tc.state)
		}
		token, err := mrtr.ProgressTokenOf(json.RawMessage(tc.params))
		if err != nil || token != tc.token {
			t.Errorf("%s: progressToken %v (%v), want %v", tc.params, token, err, tc.token)
		}
	}
}
