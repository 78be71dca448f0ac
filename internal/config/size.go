package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits maps lower-cased unit names to their multipliers.
var sizeUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kb":  1000,
	"mb":  1000 * 1000,
	"gb":  1000 * 1000 * 1000,
	"tb":  1000 * 1000 * 1000 * 1000,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
}

// ParseSize parses a byte size: a whole number of bytes, optionally followed
// by a unit. Units are B; KiB, MiB, GiB, TiB (powers of 1024); and KB, MB,
// GB, TB (powers of 1000). Units are case-insensitive and may be separated
// from the number by spaces: "64MiB", "64 mib", "1000000", "5MB".
//
// Rejected: negative numbers, fractions ("1.5GiB"; write "1536MiB"), the
// one-letter units K, M, G and T (ambiguous between 1000 and 1024), unknown
// units and values that overflow int64. Errors wrap ErrInvalid.
func ParseSize(s string) (int64, error) {
	n, problem := parseSize(s)
	if problem != "" {
		return 0, &Error{Msg: fmt.Sprintf("invalid size %q: %s", s, problem)}
	}
	return n, nil
}

// parseSize is ParseSize returning the problem as text, for use inside
// positioned errors.
func parseSize(s string) (int64, string) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, "empty; write a number of bytes or a number with a unit such as 64MiB"
	}
	if t[0] == '-' {
		return 0, "must not be negative"
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, "must start with a whole number, such as 64MiB"
	}
	digits := t[:i]
	rest := t[i:]
	if strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, ",") {
		return 0, "fractions are not supported; use a smaller unit (for example 1536MiB instead of 1.5GiB)"
	}
	unit := strings.TrimLeft(rest, " \t")
	mult, ok := sizeUnits[strings.ToLower(unit)]
	if !ok {
		switch strings.ToLower(unit) {
		case "k", "m", "g", "t":
			u := strings.ToUpper(unit)
			return 0, fmt.Sprintf("unit %q is ambiguous; write %siB (powers of 1024) or %sB (powers of 1000)", unit, u, u)
		}
		return 0, fmt.Sprintf("unknown unit %q; use B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)", unit)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, "too large"
	}
	return n * mult, ""
}

// formatSize renders n bytes compactly with a binary unit when exact, for
// error messages.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
