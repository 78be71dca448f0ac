package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCheckName checks CheckName against the decoder's rule for
// plugins[].name.
func TestCheckName(t *testing.T) {
	for _, name := range []string{"hello", "a", "0x", "my_tool-2", strings.Repeat("a", 64), "", "Hello", "-a", "_a", "a.b", "a b", strings.Repeat("a", 65)} {
		err := CheckName(name)
		_, perr := Parse(fmt.Appendf(nil, "plugins:\n  - name: %q\n    source: oci://r.example/p:1\n    verify: false\n", name), "", "", nil)
		decoderRefuses := perr != nil && strings.Contains(perr.Error(), "plugins[0].name")
		if (err != nil) != decoderRefuses {
			t.Errorf("%q: CheckName says %v, the decoder %v", name, err, perr)
		}
		if err != nil && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "invalid plugin name")) {
			t.Errorf("%q: %v", name, err)
		}
	}
}
